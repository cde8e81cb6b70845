//! `fusegraph image`: decode a file, run the image ops, encode by the
//! output's extension. Every failure is an error message and exit code 2.

use std::path::{Path, PathBuf};

use fusegraph_core::image::{
    self, resample::fit_size, Adjust, DecodeLimits, Filter, FlipAxis, Format,
};
use fusegraph_core::{Device, Error, Result};

/// Resize, filter and re-encode an image (JPEG, PNG, WebP).
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct ImageArgs {
    /// Input file (JPEG, PNG or WebP; the format is read from its bytes).
    pub input: PathBuf,
    /// Output file; the format follows its extension (.jpg/.jpeg, .png, .webp).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Output width in pixels (height follows the aspect ratio unless given).
    #[arg(short = 'w', long)]
    pub width: Option<usize>,
    /// Output height in pixels.
    #[arg(short = 'h', long)]
    pub height: Option<usize>,
    /// Resize filter: lanczos3, bilinear or nearest.
    #[arg(long, default_value = "lanczos3")]
    pub filter: String,
    /// Unsharp-mask amount (0 = off), applied after resizing.
    #[arg(long)]
    pub sharpen: Option<f64>,
    /// Sigma of the unsharp mask's blur, in pixels.
    #[arg(long, default_value_t = 1.0)]
    pub sharpen_sigma: f64,
    /// Gaussian blur sigma in pixels.
    #[arg(long)]
    pub blur: Option<f64>,
    /// Brightness factor (1 = unchanged).
    #[arg(long)]
    pub brightness: Option<f64>,
    /// Contrast factor about mid-grey (1 = unchanged).
    #[arg(long)]
    pub contrast: Option<f64>,
    /// Saturation factor (0 = grey, 1 = unchanged).
    #[arg(long)]
    pub saturation: Option<f64>,
    /// Gamma (above 1 brightens the mid-tones).
    #[arg(long)]
    pub gamma: Option<f64>,
    /// Convert to grey.
    #[arg(long)]
    pub grayscale: bool,
    /// Rotate clockwise by 90, 180 or 270 degrees (negative: counter-clockwise).
    #[arg(long, allow_hyphen_values = true)]
    pub rotate: Option<i64>,
    /// Mirror: h (left-right) or v (top-bottom).
    #[arg(long)]
    pub flip: Option<String>,
    /// Crop x,y,w,h (pixels of the input, before any other step).
    #[arg(long)]
    pub crop: Option<String>,
    /// JPEG quality 1..=100.
    #[arg(short = 'q', long, default_value_t = 80)]
    pub quality: u8,
    /// Largest input accepted, in pixels.
    #[arg(long, default_value_t = 100_000_000)]
    pub max_pixels: u64,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

fn bad(what: &'static str, expected: &'static str, got: String) -> Error {
    Error::InvalidArgument {
        op: "fusegraph image",
        what,
        expected,
        got,
    }
}

fn output_format(p: &Path) -> Result<Format> {
    let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
    Format::parse(ext).ok_or_else(|| {
        bad(
            "output extension",
            ".jpg, .jpeg, .png or .webp",
            format!("{:?}", p.display().to_string()),
        )
    })
}

fn parse_crop(s: &str) -> Result<[usize; 4]> {
    let v: Vec<usize> = s
        .split(',')
        .map(|p| p.trim().parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            bad(
                "--crop",
                "x,y,w,h as four non-negative integers",
                s.to_string(),
            )
        })?;
    <[usize; 4]>::try_from(v).map_err(|_| {
        bad(
            "--crop",
            "x,y,w,h as four non-negative integers",
            s.to_string(),
        )
    })
}

/// Runs the command and prints what it wrote.
pub fn run(a: &ImageArgs) -> Result<bool> {
    let format = output_format(&a.output)?;
    let filter = Filter::parse(&a.filter).ok_or_else(|| {
        bad(
            "--filter",
            "lanczos3, bilinear or nearest",
            a.filter.clone(),
        )
    })?;
    let flip = match &a.flip {
        Some(f) => Some(FlipAxis::parse(f).ok_or_else(|| bad("--flip", "h or v", f.clone()))?),
        None => None,
    };
    let rotate = match a.rotate {
        None => 0,
        Some(d) if d % 90 == 0 => d / 90,
        Some(d) => return Err(bad("--rotate", "a multiple of 90 degrees", d.to_string())),
    };
    let crop = a.crop.as_deref().map(parse_crop).transpose()?;
    let bytes = std::fs::read(&a.input).map_err(|e| {
        bad(
            "input file",
            "a readable file",
            format!("{}: {e}", a.input.display()),
        )
    })?;
    let limits = DecodeLimits {
        max_pixels: a.max_pixels,
        max_side: 65_535,
    };
    let mut img = image::decode(&bytes, &limits, &Device::Cpu)?;
    if let Some([x, y, w, h]) = crop {
        img = image::crop(&img, x, y, w, h)?;
    }
    if rotate != 0 {
        img = image::rotate90(&img, rotate)?;
    }
    if let Some(f) = flip {
        img = image::flip(&img, f)?;
    }
    if a.width.is_some() || a.height.is_some() {
        let (h, w, _) = image::dims_u8("fusegraph image", &img)?;
        let (ow, oh) = fit_size(h, w, a.width, a.height);
        img = image::resize(&img, ow, oh, filter)?;
    }
    if let Some(s) = a.blur {
        img = image::blur(&img, s)?;
    }
    if let Some(s) = a.sharpen {
        img = image::sharpen(&img, s, a.sharpen_sigma)?;
    }
    let adj = Adjust {
        brightness: a.brightness.unwrap_or(1.0),
        contrast: a.contrast.unwrap_or(1.0),
        saturation: a.saturation.unwrap_or(1.0),
        gamma: a.gamma.unwrap_or(1.0),
    };
    if adj != Adjust::default() {
        img = image::adjust(&img, &adj)?;
    }
    if a.grayscale {
        img = image::grayscale(&img)?;
    }
    let out = image::encode(&img, format, a.quality)?;
    std::fs::write(&a.output, &out).map_err(|e| {
        bad(
            "output file",
            "a writable path",
            format!("{}: {e}", a.output.display()),
        )
    })?;
    let s = img.shape();
    println!(
        "{}: {}x{} {} ({} bytes)",
        a.output.display(),
        s[1],
        s[0],
        format.name(),
        out.len()
    );
    Ok(true)
}
