//! JPEG decode through `jpeg-decoder`, with shrink-on-load.
//!
//! One JPEG decoder serves every path (the `image` crate reads PNG and
//! WebP only), which keeps the wasm image build to one copy of the codec.
//!
//! Shrink-on-load: a JPEG that will be downscaled by 2× or more is decoded
//! at 1/2, 1/4 or 1/8 scale straight from its DCT coefficients (reduced
//! IDCTs), as libvips and sharp do, so the decoder never produces the full
//! image. The scale is the smallest that still leaves the decoded image at
//! least as large as the target, so the final resize always downscales.

use super::codec::{check_jpeg_complete, DecodeLimits};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use jpeg_decoder::{Decoder, PixelFormat};
use std::io::Cursor;

fn jpeg_error(why: impl ToString) -> Error {
    Error::ImageDecode {
        op: "image.decode",
        format: "jpeg".into(),
        why: why.to_string(),
    }
}

/// Width and height from the frame header, without decoding pixels.
pub fn probe(bytes: &[u8]) -> Result<(u32, u32)> {
    let mut d = Decoder::new(Cursor::new(bytes));
    d.read_info().map_err(jpeg_error)?;
    let info = d.info().ok_or_else(|| jpeg_error("no frame header"))?;
    Ok((info.width as u32, info.height as u32))
}

/// Decodes a JPEG to a `u8` tensor `[H, W, C]` (grey: C = 1; RGB and CMYK:
/// C = 3; 16-bit grey is rounded to 8 bits). With `at_least = Some((w,
/// h))`, a grey or RGB file is decoded at the smallest DCT scale whose size
/// is at least `w` × `h` (the full size when none is smaller).
pub fn decode(
    bytes: &[u8],
    at_least: Option<(usize, usize)>,
    limits: &DecodeLimits,
    device: &Device,
) -> Result<Tensor> {
    check_jpeg_complete(bytes)?;
    let mut d = Decoder::new(Cursor::new(bytes));
    d.read_info().map_err(jpeg_error)?;
    let info = d.info().ok_or_else(|| jpeg_error("no frame header"))?;
    let (mut w, mut h) = (info.width as usize, info.height as usize);
    let format = info.pixel_format;
    if let (Some((min_w, min_h)), PixelFormat::L8 | PixelFormat::RGB24) = (at_least, format) {
        let clamp16 = |v: usize| v.clamp(1, u16::MAX as usize) as u16;
        let (sw, sh) = d
            .scale(clamp16(min_w), clamp16(min_h))
            .map_err(jpeg_error)?;
        (w, h) = (sw as usize, sh as usize);
    }
    // The decoder's own allocation cap backs up the header check made by
    // the caller: a file whose scans disagree with its header still cannot
    // allocate past it.
    d.set_max_decoding_buffer_size(
        usize::try_from(limits.max_pixels.saturating_mul(4)).unwrap_or(usize::MAX),
    );
    let raw = d.decode().map_err(jpeg_error)?;
    let need = w * h * format.pixel_bytes();
    if raw.len() != need {
        return Err(jpeg_error(format!(
            "decoder returned {} bytes for {w}x{h} {format:?} ({need} expected)",
            raw.len()
        )));
    }
    let (pixels, c) = match format {
        PixelFormat::L8 => (raw, 1),
        PixelFormat::RGB24 => (raw, 3),
        PixelFormat::L16 => (raw.chunks_exact(2).map(l16_to_u8).collect(), 1),
        PixelFormat::CMYK32 => (raw.chunks_exact(4).flat_map(cmyk_to_rgb).collect(), 3),
    };
    Tensor::from_vec(pixels, vec![h, w, c], device)
}

/// A 16-bit sample (native byte order, as the decoder writes it) rounded
/// to 8 bits.
fn l16_to_u8(v: &[u8]) -> u8 {
    let v = u16::from_ne_bytes([v[0], v[1]]) as u32;
    ((v * 255 + 32_767) / 65_535) as u8
}

/// CMYK (the decoder has already undone Adobe's inverted storage) to RGB:
/// each channel is `(255 - ink) * (255 - k) / 255`, rounded.
fn cmyk_to_rgb(p: &[u8]) -> [u8; 3] {
    let k = 255 - p[3] as u32;
    let ch = |ink: u8| (((255 - ink as u32) * k + 127) / 255) as u8;
    [ch(p[0]), ch(p[1]), ch(p[2])]
}
