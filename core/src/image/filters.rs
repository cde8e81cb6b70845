//! Gaussian blur and unsharp-mask sharpening, both separable.

use super::resample::{resample, resample_on_cpu, resample_u8};
use super::resample_cpu::Finish;
use super::taps::Taps;
use super::{dims_u8, invalid, to_u8};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Largest blur sigma accepted, in pixels (taps grow as 6 sigma).
pub const MAX_SIGMA: f64 = 100.0;

fn check_sigma(op: &'static str, sigma: f64) -> Result<()> {
    if sigma.is_finite() && (0.0..=MAX_SIGMA).contains(&sigma) {
        Ok(())
    } else {
        Err(invalid(
            op,
            "sigma",
            "a number in 0..=100 (pixels)",
            sigma.to_string(),
        ))
    }
}

/// The f32 Gaussian blur of an image tensor (u8 or f32), edges replicated
/// by renormalising the taps that stay inside the image.
pub fn blur_f32(img: &Tensor, sigma: f64) -> Result<Tensor> {
    let (h, w, _) = super::dims("image.blur", img)?;
    resample(img, &Taps::gaussian(h, sigma), &Taps::gaussian(w, sigma))
}

/// Gaussian blur with standard deviation `sigma` pixels (0 returns the image).
pub fn blur(img: &Tensor, sigma: f64) -> Result<Tensor> {
    dims_u8("image.blur", img)?;
    check_sigma("image.blur", sigma)?;
    if sigma == 0.0 {
        return Ok(img.clone());
    }
    let (h, w, _) = super::dims("image.blur", img)?;
    resample_u8(img, &Taps::gaussian(h, sigma), &Taps::gaussian(w, sigma))
}

/// Unsharp mask: `x + amount * (x - blur(x, sigma))`, rounded to u8. On
/// the CPU the blur's last pass computes it row by row; elsewhere the
/// difference, the scaling, the clamp and the cast run as one fused kernel
/// after the blur ([`unsharp_tail`]).
pub fn sharpen(img: &Tensor, amount: f64, sigma: f64) -> Result<Tensor> {
    dims_u8("image.sharpen", img)?;
    check_sigma("image.sharpen", sigma)?;
    if !amount.is_finite() || !(0.0..=20.0).contains(&amount) {
        return Err(invalid(
            "image.sharpen",
            "amount",
            "a number in 0..=20",
            amount.to_string(),
        ));
    }
    if amount == 0.0 || sigma == 0.0 {
        return Ok(img.clone());
    }
    if *img.device() == Device::Cpu {
        let (h, w, _) = super::dims("image.sharpen", img)?;
        let img = img.contiguous()?;
        let (rows, cols) = (Taps::gaussian(h, sigma), Taps::gaussian(w, sigma));
        // The mask's f32 operations match `unsharp_tail`'s (amount rounded
        // to f32 as its scalar is).
        return img.with_slice::<u8, _>(|x| {
            let finish = Finish::Unsharp {
                x,
                amount: amount as f32,
            };
            resample_on_cpu::<u8>(&img, &rows, &cols, finish)
        })?;
    }
    unsharp_tail(img, &blur_f32(img, sigma)?, amount)
}

/// `to_u8(x + amount * (x - blurred))` as graph ops, which fuse into one
/// kernel: the device-generic end of [`sharpen`].
pub fn unsharp_tail(img: &Tensor, blurred: &Tensor, amount: f64) -> Result<Tensor> {
    let x = img.cast(DType::F32)?;
    let detail = x.sub(blurred)?.mul_scalar(amount)?;
    to_u8(&x.add(&detail)?)
}
