//! Images as tensors: an image is a `u8` tensor of shape `[height, width,
//! channels]` (channels 1 = grey, 3 = RGB, 4 = RGBA), row-major and
//! interleaved as decoders produce it.
//!
//! - [`codec`]: probe the header, decode (with pixel limits checked before
//!   anything is allocated), encode JPEG, PNG and WebP (WebP is written
//!   lossless: the encoder of the `image` crate has no lossy mode).
//! - [`geometry`]: crop, flip and rotate by quarter turns, as views and gathers.
//! - [`colour`]: brightness, contrast, saturation, gamma, grayscale and colour
//!   matrices, built from elementwise graph ops so that the whole chain, the
//!   clamp and the cast back to `u8` fuse into one kernel.
//! - [`taps`] + [`resample`]: separable 1-D filters with per-output tap tables
//!   (resize with nearest, bilinear and Lanczos3; Gaussian blur).
//! - [`filters`]: blur and unsharp-mask sharpen.
//! - [`transform`]: the one-call decode → resize → filter → encode pipeline.

pub mod codec;
pub mod colour;
pub mod filters;
pub mod geometry;
pub mod jpeg;
pub mod resample;
pub mod resample_cpu;
pub mod taps;
pub mod transform;

pub use codec::{decode, encode, probe, DecodeLimits, Format, ImageInfo};
pub use colour::{adjust, colour_matrix, grayscale, Adjust};
pub use filters::{blur, sharpen};
pub use geometry::{crop, flip, rotate90, FlipAxis};
pub use resample::{resize, Filter};
pub use transform::{transform, Timings, TransformOptions, TransformOutput};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// `(height, width, channels)` of an image tensor, or an error naming `op`
/// when `t` is not `[H, W, C]` with C in 1..=4 and H, W > 0.
pub fn dims(op: &'static str, t: &Tensor) -> Result<(usize, usize, usize)> {
    match *t.shape() {
        [h, w, c] if h > 0 && w > 0 && (1..=4).contains(&c) => Ok((h, w, c)),
        _ => Err(Error::InvalidArgument {
            op,
            what: "image shape",
            expected: "[height, width, channels] with height, width > 0 and 1..=4 channels",
            got: format!("{:?}", t.shape()),
        }),
    }
}

/// Like [`dims`], and also requires the `u8` dtype images are stored in.
pub fn dims_u8(op: &'static str, t: &Tensor) -> Result<(usize, usize, usize)> {
    if t.dtype() != DType::U8 {
        return Err(Error::UnsupportedDType {
            op,
            dtype: t.dtype(),
            why: "images are u8 tensors [height, width, channels]",
        });
    }
    dims(op, t)
}

/// Rounds f32 pixel values back to `u8`: clamp to 0..=255, add one half and
/// truncate (the cast truncates), so the result is round-half-up. Lazy, so it
/// fuses into the kernel that computes `x`.
pub fn to_u8(x: &Tensor) -> Result<Tensor> {
    x.clamp(0.0, 255.0)?.add_scalar(0.5)?.cast(DType::U8)
}

fn invalid(op: &'static str, what: &'static str, expected: &'static str, got: String) -> Error {
    Error::InvalidArgument {
        op,
        what,
        expected,
        got,
    }
}
