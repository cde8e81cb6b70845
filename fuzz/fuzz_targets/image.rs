//! Image files and transform parameters: decode (JPEG, PNG, WebP) and every
//! image op the CLI and the edge pipeline run, on arbitrary bytes.
//!
//! The first `PARAMS` bytes of the input are the parameters (decoded with
//! `arbitrary::Unstructured`), the rest is the file. Half the cases go
//! through the one-call pipeline (`image::transform`, with shrink-on-load),
//! the others through the ops one by one (decode, crop, rotate, flip, resize,
//! blur, sharpen, adjust, grayscale, colour matrix, encode).
//!
//! Properties:
//! 1. every call returns `Ok` or an `Err` (never panics);
//! 2. decoding honours its limits: an image over `max_pixels` or `max_side`
//!    is refused (the limits are small here, 2^20 pixels, so a header that
//!    claims a large image is a decompression bomb, and the run's
//!    `-rss_limit_mb` catches any decoder that allocates past the check);
//! 3. the results have the shapes the parameters ask for, and a PNG or WebP
//!    (lossless) written by `encode` decodes back to the same pixels.
//!
//! Output sizes are bounded here (at most 512 a side, blur sigma at most
//! 24 save for the rare 100) so that a case takes milliseconds; sizes past
//! the library's own limits are passed too and must come back as an `Err`.
//!
//! `FUSEGRAPH_FUZZ_SEEDS=<dir>` writes the seed corpus (tiny images of every
//! format and channel count, and the small photos of `www/images`, each
//! behind a few parameter prefixes) into `<dir>` at start-up.

#![no_main]

use arbitrary::{Result as AResult, Unstructured};
use fusegraph_core::image::{
    self, resample::fit_size, Adjust, DecodeLimits, Filter, FlipAxis, Format, TransformOptions,
};
use fusegraph_core::{Device, Tensor};
use libfuzzer_sys::fuzz_target;

/// Parameter bytes in front of the file.
const PARAMS: usize = 40;
const MAX_PIXELS: u64 = 1 << 20;

fn side(u: &mut Unstructured) -> AResult<usize> {
    let raw: u16 = u.arbitrary()?;
    Ok(match raw {
        0 => 0,
        0xFFF0.. => 65_536 + (raw as usize & 0xF) * 1000, // over MAX_OUTPUT_SIDE: an Err
        _ => 1 + raw as usize % 512,
    })
}

fn sigma(u: &mut Unstructured) -> AResult<f64> {
    let raw: u8 = u.arbitrary()?;
    Ok(match raw {
        0xFF => f64::NAN,
        0xFE => -1.0,
        0xFD => 100.5,
        0xFC => 100.0,
        _ => raw as f64 / 10.0,
    })
}

fn factor(u: &mut Unstructured) -> AResult<f64> {
    let raw: u8 = u.arbitrary()?;
    Ok(match raw {
        0xFF => f64::INFINITY,
        _ => raw as f64 / 20.0, // 0..=12.7: past 10 is an Err
    })
}

fn filter(u: &mut Unstructured) -> AResult<Filter> {
    Ok(*u.choose(&[Filter::Nearest, Filter::Bilinear, Filter::Lanczos3])?)
}

fn format(u: &mut Unstructured) -> AResult<Format> {
    Ok(*u.choose(&[Format::Jpeg, Format::Png, Format::WebP])?)
}

fn limits(u: &mut Unstructured) -> AResult<DecodeLimits> {
    Ok(DecodeLimits {
        max_pixels: *u.choose(&[MAX_PIXELS, 4096, 1])?,
        max_side: *u.choose(&[4096, 64, 1])?,
    })
}

fn within(t: &Tensor, l: &DecodeLimits) {
    let s = t.shape();
    assert_eq!(s.len(), 3, "decoded shape {s:?}");
    assert!(
        (s[0] * s[1]) as u64 <= l.max_pixels && s[0].max(s[1]) <= l.max_side as usize,
        "decoded {s:?} past the limits {l:?}"
    );
    assert!(matches!(s[2], 1 | 3 | 4), "decoded {s:?}");
}

fn pipeline(u: &mut Unstructured, file: &[u8]) -> AResult<()> {
    let w = if u.arbitrary()? { Some(side(u)?) } else { None };
    let h = if u.arbitrary()? { Some(side(u)?) } else { None };
    let o = TransformOptions {
        width: w,
        height: h,
        filter: filter(u)?,
        format: if u.arbitrary()? {
            Some(format(u)?)
        } else {
            None
        },
        quality: u.arbitrary()?,
        blur: sigma(u)?,
        sharpen: factor(u)?,
        sharpen_sigma: sigma(u)?,
        limits: limits(u)?,
        shrink_on_load: u.arbitrary()?,
    };
    // fit_size can follow the aspect ratio far past 512: keep cases fast.
    if let Ok(info) = image::probe(file) {
        let (ow, oh) = fit_size(info.height as usize, info.width as usize, w, h);
        if ow.saturating_mul(oh) > 1 << 20 {
            return Ok(());
        }
    }
    if let Ok(out) = image::transform(file, &o, &|| 0.0) {
        let back = image::decode(&out.bytes, &DecodeLimits::default(), &Device::Cpu)
            .expect("transform output decodes");
        let s = back.shape();
        assert_eq!(
            (s[1], s[0]),
            (out.width, out.height),
            "transform output size"
        );
    }
    Ok(())
}

fn ops(u: &mut Unstructured, file: &[u8]) -> AResult<()> {
    let l = limits(u)?;
    let Ok(mut img) = image::decode(file, &l, &Device::Cpu) else {
        return Ok(());
    };
    within(&img, &l);
    if u.arbitrary()? {
        let (x, y, w, h): (u8, u8, u8, u8) = u.arbitrary()?;
        let (x, y, w, h) = (x as usize, y as usize, w as usize, h as usize);
        match image::crop(&img, x, y, w, h) {
            Ok(c) => {
                assert_eq!(&c.shape()[..2], &[h, w], "crop");
                img = c;
            }
            Err(_) => {}
        }
    }
    let k: i8 = u.arbitrary()?;
    if k % 4 != 0 {
        let before = img.shape().to_vec();
        img = image::rotate90(&img, k as i64).expect("rotate a valid image");
        if k % 2 != 0 {
            assert_eq!(img.shape(), &[before[1], before[0], before[2]], "rotate");
        }
    }
    match u.int_in_range(0..=2u8)? {
        1 => img = image::flip(&img, FlipAxis::Horizontal).expect("flip"),
        2 => img = image::flip(&img, FlipAxis::Vertical).expect("flip"),
        _ => {}
    }
    if u.arbitrary()? {
        let (w, h) = (side(u)?, side(u)?);
        let f = filter(u)?;
        if let Ok(r) = image::resize(&img, w, h, f) {
            assert_eq!(&r.shape()[..2], &[h, w], "resize");
            img = r;
        }
    }
    let s = sigma(u)?;
    let s = if s.is_finite() && s > 24.0 && s != 100.0 {
        24.0
    } else {
        s
    };
    if let Ok(b) = image::blur(&img, s) {
        img = b;
    }
    let (amount, ss) = (factor(u)?, sigma(u)?);
    let ss = if ss.is_finite() && ss > 24.0 && ss != 100.0 {
        24.0
    } else {
        ss
    };
    if let Ok(b) = image::sharpen(&img, amount, ss) {
        img = b;
    }
    let adj = Adjust {
        brightness: factor(u)?,
        contrast: factor(u)?,
        saturation: factor(u)?,
        gamma: factor(u)?,
    };
    if let Ok(a) = image::adjust(&img, &adj) {
        assert_eq!(a.shape(), img.shape(), "adjust");
        img = a;
    }
    if u.arbitrary()? {
        let g = image::grayscale(&img).expect("grayscale of a u8 image");
        let c = img.shape()[2];
        assert_eq!(g.shape()[2], if c >= 3 { c - 2 } else { c }, "grayscale");
        img = g;
    }
    if u.arbitrary()? {
        let c = img.shape()[2];
        let k = if c <= 2 { 1 } else { 3 };
        let m: Vec<f64> = (0..k * k)
            .map(|_| Ok(u.arbitrary::<i8>()? as f64 / 32.0))
            .collect::<AResult<_>>()?;
        let off: Vec<f64> = (0..k)
            .map(|_| Ok(u.arbitrary::<i8>()? as f64))
            .collect::<AResult<_>>()?;
        let m = if u.ratio(1, 16)? { m[1..].to_vec() } else { m };
        if let Ok(x) = image::colour_matrix(&img, &m, &off) {
            img = x;
        }
    }
    let fmt = format(u)?;
    let q: u8 = u.arbitrary()?;
    let Ok(bytes) = image::encode(&img, fmt, q) else {
        assert!(q == 0 || q > 100, "encode of a valid image failed");
        return Ok(());
    };
    let back = image::decode(&bytes, &DecodeLimits::default(), &Device::Cpu)
        .expect("encoded image decodes");
    let (s, b) = (img.shape(), back.shape());
    assert_eq!(&b[..2], &s[..2], "round trip size");
    // Lossless formats come back pixel for pixel (grey + alpha decodes as
    // RGBA; WebP has no grey mode, so grey written as WebP decodes as RGB
    // with three equal channels).
    if fmt != Format::Jpeg && s[2] != 2 {
        let grey_webp = fmt == Format::WebP && s[2] == 1;
        assert_eq!(
            b[2],
            if grey_webp { 3 } else { s[2] },
            "round trip channels"
        );
        let mut want = img
            .contiguous()
            .and_then(|t| t.to_vec::<u8>())
            .expect("pixels");
        if grey_webp {
            want = want.iter().flat_map(|&g| [g, g, g]).collect();
        }
        let got = back.to_vec::<u8>().expect("pixels");
        assert!(want == got, "{} round trip changed the pixels", fmt.name());
    }
    Ok(())
}

fn run(data: &[u8]) -> AResult<()> {
    if data.len() < PARAMS {
        return Ok(());
    }
    let (params, file) = data.split_at(PARAMS);
    let mut u = Unstructured::new(params);
    if u.arbitrary()? {
        pipeline(&mut u, file)
    } else {
        ops(&mut u, file)
    }
}

/// Writes the seed corpus: tiny images of each format and channel count
/// (encoded by fusegraph itself) and the small photos of `www/images`, each
/// behind a few parameter prefixes.
fn write_seeds(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).expect("seed dir");
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for (w, h) in [(1usize, 1usize), (7, 5), (16, 9)] {
        for c in [1usize, 3, 4] {
            let px: Vec<u8> = (0..w * h * c).map(|i| (i * 37 % 256) as u8).collect();
            let t = Tensor::from_vec(px, vec![h, w, c], &Device::Cpu).expect("seed image");
            for f in [Format::Jpeg, Format::Png, Format::WebP] {
                let bytes = image::encode(&t, f, 90).expect("seed encode");
                files.push((format!("{w}x{h}x{c}.{}", f.name()), bytes));
            }
        }
    }
    let photos = concat!(env!("CARGO_MANIFEST_DIR"), "/../www/images");
    if let Ok(rd) = std::fs::read_dir(photos) {
        for e in rd.flatten() {
            let p = e.path();
            let small = e.metadata().is_ok_and(|m| m.len() <= 80_000);
            let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
            if small && Format::parse(ext).is_some() {
                if let Ok(b) = std::fs::read(&p) {
                    files.push((p.file_name().unwrap().to_string_lossy().into_owned(), b));
                }
            }
        }
    }
    let prefixes: [[u8; PARAMS]; 3] = [
        [0; PARAMS],
        [1; PARAMS],
        std::array::from_fn(|i| (i * 29 % 251) as u8),
    ];
    for (name, bytes) in files {
        for (k, p) in prefixes.iter().enumerate() {
            let mut v = p.to_vec();
            v.extend_from_slice(&bytes);
            std::fs::write(dir.join(format!("seed-{k}-{name}")), v).expect("write seed");
        }
    }
}

fuzz_target!(
    init: {
        if let Some(dir) = std::env::var_os("FUSEGRAPH_FUZZ_SEEDS") {
            write_seeds(std::path::Path::new(&dir));
        }
    },
    |data: &[u8]| {
        let _ = run(data);
    }
);
