//! Shrink-on-load: a JPEG that will be downscaled by 2× or more is decoded
//! at 1/2, 1/4 or 1/8 scale straight from its DCT coefficients (reduced
//! IDCTs), as libvips and sharp do, so the decoder never produces the full
//! image. The scale is the smallest that still leaves the decoded image at
//! least as large as the target, so the final resize always downscales.

use super::codec::{check_jpeg_complete, DecodeLimits};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::io::Cursor;

fn jpeg_error(why: impl ToString) -> Error {
    Error::ImageDecode {
        op: "image.decode",
        format: "jpeg".into(),
        why: why.to_string(),
    }
}

/// Decodes a JPEG at the smallest DCT scale whose size is at least
/// `min_w` × `min_h`. `None` when the file's pixel format is not grey or
/// RGB (CMYK, 16-bit): the caller then decodes it in full.
pub fn decode_jpeg_at_least(
    bytes: &[u8],
    min_w: usize,
    min_h: usize,
    limits: &DecodeLimits,
    device: &Device,
) -> Result<Option<Tensor>> {
    check_jpeg_complete(bytes)?;
    let mut d = jpeg_decoder::Decoder::new(Cursor::new(bytes));
    d.read_info().map_err(jpeg_error)?;
    let info = d.info().ok_or_else(|| jpeg_error("no frame header"))?;
    let channels = match info.pixel_format {
        jpeg_decoder::PixelFormat::L8 => 1,
        jpeg_decoder::PixelFormat::RGB24 => 3,
        _ => return Ok(None),
    };
    let clamp16 = |v: usize| v.clamp(1, u16::MAX as usize) as u16;
    let (w, h) = d
        .scale(clamp16(min_w), clamp16(min_h))
        .map_err(jpeg_error)?;
    d.set_max_decoding_buffer_size(
        usize::try_from(limits.max_pixels.saturating_mul(4)).unwrap_or(usize::MAX),
    );
    let pixels = d.decode().map_err(jpeg_error)?;
    let (w, h) = (w as usize, h as usize);
    if pixels.len() != w * h * channels {
        return Err(jpeg_error(format!(
            "decoder returned {} bytes for {w}x{h}x{channels}",
            pixels.len()
        )));
    }
    Tensor::from_vec(pixels, vec![h, w, channels], device).map(Some)
}
