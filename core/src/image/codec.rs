//! Decode and encode JPEG, PNG and WebP: JPEG through `jpeg-decoder`
//! ([`super::jpeg`]) and `jpeg-encoder`, PNG and WebP through the `image`
//! crate.
//!
//! Decoding reads the header first and refuses images over the caller's
//! limits before a pixel buffer exists, so a small file that claims to be
//! 60000x60000 (a decompression bomb) costs nothing but the header read.

use super::{dims_u8, invalid};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use image::{DynamicImage, ExtendedColorType, ImageEncoder, ImageFormat, ImageReader};
use std::io::Cursor;

/// The formats the image ops read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Jpeg,
    Png,
    WebP,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Jpeg => "jpeg",
            Format::Png => "png",
            Format::WebP => "webp",
        }
    }

    /// `jpeg`/`jpg`, `png`, `webp` (any case); also file extensions.
    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "jpeg" | "jpg" => Some(Format::Jpeg),
            "png" => Some(Format::Png),
            "webp" => Some(Format::WebP),
            _ => None,
        }
    }

    fn of(f: ImageFormat) -> Option<Format> {
        match f {
            ImageFormat::Jpeg => Some(Format::Jpeg),
            ImageFormat::Png => Some(Format::Png),
            ImageFormat::WebP => Some(Format::WebP),
            _ => None,
        }
    }
}

/// What the header says, read without decoding pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageInfo {
    pub width: u32,
    pub height: u32,
    pub format: Format,
}

/// Upper bounds checked against the header before decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Most pixels (width × height) accepted.
    pub max_pixels: u64,
    /// Most pixels along either side.
    pub max_side: u32,
}

impl Default for DecodeLimits {
    /// 25 MP and 8192 px a side: room for phone photos, far below what
    /// would exhaust a 128 MiB edge isolate.
    fn default() -> Self {
        DecodeLimits {
            max_pixels: 25_000_000,
            max_side: 8192,
        }
    }
}

fn decode_error(format: &str, why: impl ToString) -> Error {
    Error::ImageDecode {
        op: "image.decode",
        format: format.to_string(),
        why: why.to_string(),
    }
}

fn reader(bytes: &[u8]) -> Result<(ImageReader<Cursor<&[u8]>>, Format)> {
    let r = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| decode_error("unknown", e))?;
    let format = match r.format() {
        Some(f) => Format::of(f).ok_or_else(|| {
            decode_error(
                &format!("{f:?}").to_ascii_lowercase(),
                "unsupported format (jpeg, png and webp are read)",
            )
        })?,
        None => {
            return Err(decode_error(
                "unknown",
                format!(
                    "not a jpeg, png or webp file ({} bytes, no known signature)",
                    bytes.len()
                ),
            ))
        }
    };
    Ok((r, format))
}

/// Width, height and format from the header alone.
pub fn probe(bytes: &[u8]) -> Result<ImageInfo> {
    let (mut r, format) = reader(bytes)?;
    if let Some((width, height)) = png_ihdr(bytes).filter(|_| format == Format::Png) {
        return Ok(ImageInfo {
            width,
            height,
            format,
        });
    }
    if format == Format::Jpeg {
        let (width, height) = super::jpeg::probe(bytes)?;
        return Ok(ImageInfo {
            width,
            height,
            format,
        });
    }
    // Reading a header allocates nothing that scales with the image.
    r.no_limits();
    let (width, height) = r
        .into_dimensions()
        .map_err(|e| decode_error(format.name(), e))?;
    if width == 0 || height == 0 {
        return Err(decode_error(
            format.name(),
            format!("header says {width}x{height}"),
        ));
    }
    Ok(ImageInfo {
        width,
        height,
        format,
    })
}

/// Width and height from a PNG's IHDR chunk. Read here rather than by the
/// PNG decoder, which sizes its buffer from them first: on 32-bit wasm a
/// bomb's 60000x60000 header overflows that computation and would come back
/// as a decode error instead of the dimensions the limits are checked on.
fn png_ihdr(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    Some((be(16), be(20)))
}

/// Checks a header against the limits.
pub fn check_limits(info: &ImageInfo, limits: &DecodeLimits) -> Result<()> {
    let (w, h) = (info.width as u64, info.height as u64);
    let too_large = |limit: String| Error::ImageTooLarge {
        op: "image.decode",
        width: w,
        height: h,
        limit,
    };
    if w > limits.max_side as u64 || h > limits.max_side as u64 {
        return Err(too_large(format!("maxSide {}", limits.max_side)));
    }
    if w * h > limits.max_pixels {
        return Err(too_large(format!("maxPixels {}", limits.max_pixels)));
    }
    Ok(())
}

/// Decodes to a `u8` tensor `[H, W, C]` on `device`: C = 1 for grey, 3 for
/// RGB, 4 when the file has alpha (grey + alpha becomes RGBA). 16-bit and
/// float images are converted to 8 bits. WebP has no grey mode: a grey
/// image written as WebP comes back as RGB with three equal channels.
pub fn decode(bytes: &[u8], limits: &DecodeLimits, device: &Device) -> Result<Tensor> {
    let info = probe(bytes)?;
    check_limits(&info, limits)?;
    decode_probed(bytes, &info, limits, device)
}

/// [`decode`] for a caller that has already probed the header and checked
/// it against `limits` (the image pipeline), so the header is not read again.
pub(crate) fn decode_probed(
    bytes: &[u8],
    info: &ImageInfo,
    limits: &DecodeLimits,
    device: &Device,
) -> Result<Tensor> {
    if info.format == Format::Jpeg {
        return super::jpeg::decode(bytes, None, limits, device);
    }
    let (mut r, format) = reader(bytes)?;
    // The decoder's own allocation cap backs up the header check: a file
    // whose frames disagree with its header still cannot allocate past it.
    let mut l = image::Limits::default();
    l.max_image_width = Some(limits.max_side);
    l.max_image_height = Some(limits.max_side);
    l.max_alloc = Some(limits.max_pixels.saturating_mul(16).max(1 << 20));
    r.limits(l);
    let img = r.decode().map_err(|e| decode_error(format.name(), e))?;
    from_dynamic(img, device)
}

/// The JPEG decoder fills a truncated scan with grey instead of failing
/// (as browsers do); a server should not serve that as a valid picture, so
/// a JPEG must end with its end-of-image marker (trailing zero padding is
/// allowed).
pub(crate) fn check_jpeg_complete(bytes: &[u8]) -> Result<()> {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    if end >= 2 && bytes[end - 2..end] == [0xFF, 0xD9] {
        Ok(())
    } else {
        Err(decode_error(
            "jpeg",
            "truncated: the file does not end with an end-of-image marker",
        ))
    }
}

/// An image tensor from a decoded `image::DynamicImage`.
pub fn from_dynamic(img: DynamicImage, device: &Device) -> Result<Tensor> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let color = img.color();
    let (data, c) = if color.has_alpha() {
        (img.into_rgba8().into_raw(), 4)
    } else if color.has_color() {
        (img.into_rgb8().into_raw(), 3)
    } else {
        (img.into_luma8().into_raw(), 1)
    };
    Tensor::from_vec(data, vec![h, w, c], device)
}

/// Encodes an image tensor. `quality` (1..=100) applies to JPEG, which is
/// baseline with 4:2:0 chroma below quality 90 and 4:4:4 from 90 up, and
/// has no alpha channel (alpha is dropped); PNG and WebP are lossless (the
/// WebP encoder has no lossy mode).
pub fn encode(img: &Tensor, format: Format, quality: u8) -> Result<Vec<u8>> {
    let (h, w, c) = dims_u8("image.encode", img)?;
    if !(1..=100).contains(&quality) {
        return Err(invalid(
            "image.encode",
            "quality",
            "an integer in 1..=100",
            quality.to_string(),
        ));
    }
    let enc_err = |why: String| Error::ImageEncode {
        op: "image.encode",
        format: format.name().to_string(),
        shape: vec![h, w, c],
        why,
    };
    let pixels = img.contiguous()?;
    pixels.with_slice::<u8, _>(|pixels| {
        match format {
            Format::Jpeg => encode_jpeg(pixels, (h, w, c), quality),
            Format::Png | Format::WebP => encode_lossless(pixels, (h, w, c), format),
        }
        .map_err(enc_err)
    })?
}

/// PNG, or lossless WebP, through the `image` crate's encoders.
fn encode_lossless(
    pixels: &[u8],
    (h, w, c): (usize, usize, usize),
    format: Format,
) -> std::result::Result<Vec<u8>, String> {
    let side = |n: usize| u32::try_from(n).map_err(|e| e.to_string());
    let (wu, hu) = (side(w)?, side(h)?);
    let color = match c {
        1 => ExtendedColorType::L8,
        2 => ExtendedColorType::La8,
        3 => ExtendedColorType::Rgb8,
        _ => ExtendedColorType::Rgba8,
    };
    let mut out = Vec::new();
    let res = if format == Format::Png {
        image::codecs::png::PngEncoder::new(&mut out).write_image(pixels, wu, hu, color)
    } else {
        image::codecs::webp::WebPEncoder::new_lossless(&mut out).write_image(pixels, wu, hu, color)
    };
    res.map_err(|e| e.to_string())?;
    Ok(out)
}

/// Baseline JPEG with 4:2:0 chroma (box-averaged, as libjpeg does) below
/// quality 90 and 4:4:4 from 90 up; alpha is dropped (JPEG has none).
fn encode_jpeg(
    pixels: &[u8],
    (h, w, c): (usize, usize, usize),
    quality: u8,
) -> std::result::Result<Vec<u8>, String> {
    let side = |n: usize| {
        u16::try_from(n).map_err(|_| format!("JPEG sides are at most 65535 pixels, got {n}"))
    };
    let (wu, hu) = (side(w)?, side(h)?);
    let grey;
    let (data, color) = match c {
        1 => (pixels, jpeg_encoder::ColorType::Luma),
        2 => {
            grey = drop_alpha(pixels, 2);
            (&grey[..], jpeg_encoder::ColorType::Luma)
        }
        3 => (pixels, jpeg_encoder::ColorType::Rgb),
        _ => (pixels, jpeg_encoder::ColorType::Rgba),
    };
    let mut out = Vec::with_capacity(h * w * c / 8 + 1024);
    let mut enc = jpeg_encoder::Encoder::new(&mut out, quality);
    enc.set_chroma_subsampling_method(jpeg_encoder::ChromaSubsamplingMethod::Average);
    enc.encode(data, wu, hu, color).map_err(|e| e.to_string())?;
    Ok(out)
}

fn drop_alpha(pixels: &[u8], c: usize) -> Vec<u8> {
    pixels
        .chunks_exact(c)
        .flat_map(|p| p[..c - 1].iter().copied())
        .collect()
}
