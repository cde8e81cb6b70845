//! The one-call pipeline an image server runs per request:
//! decode → resize → blur → sharpen → encode, timing each stage.

use super::codec::{decode_probed, encode, DecodeLimits, Format};
use super::filters::{blur, sharpen};
use super::invalid;
use super::resample::{fit_size, resize, Filter};
use crate::device::Device;
use crate::error::Result;

/// What [`transform`] does; `None`/0 fields leave that stage out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransformOptions {
    /// Output width; the height follows the aspect ratio when not given.
    pub width: Option<usize>,
    pub height: Option<usize>,
    pub filter: Filter,
    /// Output format; the input's when `None`.
    pub format: Option<Format>,
    /// JPEG quality 1..=100.
    pub quality: u8,
    /// Gaussian blur sigma in output pixels (0 = none).
    pub blur: f64,
    /// Unsharp-mask amount (0 = none) and its sigma.
    pub sharpen: f64,
    pub sharpen_sigma: f64,
    pub limits: DecodeLimits,
    /// Decode JPEGs at 1/2, 1/4 or 1/8 scale when the resize allows it.
    pub shrink_on_load: bool,
}

impl Default for TransformOptions {
    fn default() -> Self {
        TransformOptions {
            width: None,
            height: None,
            filter: Filter::Lanczos3,
            format: None,
            quality: 80,
            blur: 0.0,
            sharpen: 0.0,
            sharpen_sigma: 1.0,
            limits: DecodeLimits::default(),
            shrink_on_load: true,
        }
    }
}

/// Milliseconds spent in each stage.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timings {
    pub decode: f64,
    pub process: f64,
    pub encode: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TransformOutput {
    pub bytes: Vec<u8>,
    pub width: usize,
    pub height: usize,
    pub format: Format,
    pub timings: Timings,
}

/// Runs the pipeline on the CPU. `now_ms` is the caller's clock (wasm has
/// no `std::time`; the bindings pass `performance.now()`).
pub fn transform(
    bytes: &[u8],
    o: &TransformOptions,
    now_ms: &dyn Fn() -> f64,
) -> Result<TransformOutput> {
    for (what, v) in [("width", o.width), ("height", o.height)] {
        if v == Some(0) {
            return Err(invalid(
                "image.transform",
                what,
                "a positive integer",
                "0".into(),
            ));
        }
    }
    let t0 = now_ms();
    let info = super::codec::probe(bytes)?;
    super::codec::check_limits(&info, &o.limits)?;
    let (w, h) = (info.width as usize, info.height as usize);
    let (ow, oh) = fit_size(h, w, o.width, o.height);
    // Shrink-on-load when the JPEG is downscaled 2x or more on both axes.
    let img = if o.shrink_on_load && info.format == Format::Jpeg && w >= 2 * ow && h >= 2 * oh {
        super::jpeg::decode(bytes, Some((ow, oh)), &o.limits, &Device::Cpu)?
    } else {
        decode_probed(bytes, &info, &o.limits, &Device::Cpu)?
    };
    let t1 = now_ms();
    let mut img = resize(&img, ow, oh, o.filter)?;
    if o.blur != 0.0 {
        img = blur(&img, o.blur)?;
    }
    if o.sharpen != 0.0 {
        img = sharpen(&img, o.sharpen, o.sharpen_sigma)?;
    }
    img.realize()?;
    let t2 = now_ms();
    let format = o.format.unwrap_or(info.format);
    let out = encode(&img, format, o.quality)?;
    let t3 = now_ms();
    Ok(TransformOutput {
        bytes: out,
        width: ow,
        height: oh,
        format,
        timings: Timings {
            decode: t1 - t0,
            process: t2 - t1,
            encode: t3 - t2,
        },
    })
}
