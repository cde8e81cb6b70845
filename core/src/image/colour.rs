//! Colour operations as elementwise graph ops. Brightness, contrast and
//! saturation are all affine in the colour vector, so they compose on the
//! host into one matrix and offset; the graph then computes
//! `sum_j x[..., j] * M[:, j] + b` with broadcasts, the gamma curve, the
//! clamp and the cast back to `u8`: one fused kernel on every backend.

use super::{dims, dims_u8, invalid, to_u8};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Rec. 601 luma weights (what JPEG's YCbCr and most "grayscale" use).
pub const LUMA: [f64; 3] = [0.299, 0.587, 0.114];

/// Colour adjustments; every field is a factor where 1 changes nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adjust {
    /// Multiplies every colour channel (0 = black).
    pub brightness: f64,
    /// Scales the distance from mid-grey 128 (0 = flat grey).
    pub contrast: f64,
    /// Scales the distance from the pixel's luma (0 = grey, 2 = vivid).
    pub saturation: f64,
    /// `255 * (x / 255) ^ (1 / gamma)`: above 1 brightens the mid-tones.
    pub gamma: f64,
}

impl Default for Adjust {
    fn default() -> Self {
        Adjust {
            brightness: 1.0,
            contrast: 1.0,
            saturation: 1.0,
            gamma: 1.0,
        }
    }
}

/// `out[..., o] = sum_i x[..., i] * m[o][i] + offset[o]` for an f32 image
/// `x` of C channels; `m` is `out_c` rows of C. Lazy and fusable.
pub fn apply_matrix(x: &Tensor, m: &[Vec<f64>], offset: &[f64]) -> Result<Tensor> {
    let (_, _, c) = dims("image.colour_matrix", x)?;
    let out_c = m.len();
    if out_c == 0 || m.iter().any(|r| r.len() != c) || offset.len() != out_c {
        return Err(invalid(
            "image.colour_matrix",
            "matrix",
            "out_c rows of one entry per input channel and out_c offsets",
            format!("{} rows for {c} channels, {} offsets", out_c, offset.len()),
        ));
    }
    let dev = *x.device();
    let col = |i: usize| -> Result<Tensor> {
        let v: Vec<f32> = m.iter().map(|r| r[i] as f32).collect();
        Tensor::from_vec(v, vec![out_c], &dev)
    };
    let mut acc = x.narrow(2, 0, 1)?.mul(&col(0)?)?;
    for i in 1..c {
        acc = acc.add(&x.narrow(2, i, 1)?.mul(&col(i)?)?)?;
    }
    if offset.iter().any(|&o| o != 0.0) {
        let b: Vec<f32> = offset.iter().map(|&o| o as f32).collect();
        acc = acc.add(&Tensor::from_vec(b, vec![out_c], &dev)?)?;
    }
    Ok(acc)
}

/// The colour channels of a C-channel image: 1 for grey (+alpha), else 3.
fn colour_channels(c: usize) -> usize {
    if c <= 2 {
        1
    } else {
        3
    }
}

/// Extends a k×k colour matrix with identity rows/columns for alpha.
fn with_alpha(m: &[Vec<f64>], off: &[f64], c: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let k = colour_channels(c);
    let mut full = vec![vec![0.0; c]; c];
    let mut b = vec![0.0; c];
    for ((row, src), (bo, &oo)) in full.iter_mut().zip(m).zip(b.iter_mut().zip(off)).take(k) {
        row[..k].copy_from_slice(&src[..k]);
        *bo = oo;
    }
    if c > k {
        full[k][k] = 1.0;
    }
    (full, b)
}

/// Applies a colour matrix to the colour channels of a `u8` image (alpha
/// passes through): `matrix` is 3×3 for RGB(A), 1×1 for grey, row-major,
/// `offset` one value per row, in 0..255 units.
pub fn colour_matrix(img: &Tensor, matrix: &[f64], offset: &[f64]) -> Result<Tensor> {
    let (_, _, c) = dims_u8("image.colour_matrix", img)?;
    let k = colour_channels(c);
    if matrix.len() != k * k
        || offset.len() != k
        || matrix.iter().chain(offset).any(|v| !v.is_finite())
    {
        return Err(invalid(
            "image.colour_matrix",
            "matrix",
            "k*k finite entries and k offsets, k = 3 for RGB(A), 1 for grey",
            format!(
                "{} entries and {} offsets for {c} channels",
                matrix.len(),
                offset.len()
            ),
        ));
    }
    let rows: Vec<Vec<f64>> = matrix.chunks(k).map(|r| r.to_vec()).collect();
    let (m, b) = with_alpha(&rows, offset, c);
    to_u8(&apply_matrix(&img.cast(DType::F32)?, &m, &b)?)
}

fn check_factor(what: &'static str, v: f64, lo: f64, hi: f64) -> Result<()> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(invalid("image.adjust", what, "a finite factor in its range (brightness, contrast, saturation 0..=10; gamma 0.05..=20)", v.to_string()))
    }
}

/// Brightness, contrast, saturation and gamma in one fused kernel.
pub fn adjust(img: &Tensor, a: &Adjust) -> Result<Tensor> {
    let (_, _, c) = dims_u8("image.adjust", img)?;
    check_factor("brightness", a.brightness, 0.0, 10.0)?;
    check_factor("contrast", a.contrast, 0.0, 10.0)?;
    check_factor("saturation", a.saturation, 0.0, 10.0)?;
    check_factor("gamma", a.gamma, 0.05, 20.0)?;
    let k = colour_channels(c);
    // Saturation about the luma, then brightness, then contrast about 128.
    let mut m = vec![vec![0.0; k]; k];
    for (o, row) in m.iter_mut().enumerate() {
        for (i, v) in row.iter_mut().enumerate() {
            let sat = if k == 3 {
                a.saturation * f64::from(u8::from(o == i)) + (1.0 - a.saturation) * LUMA[i]
            } else {
                1.0
            };
            *v = a.contrast * a.brightness * sat;
        }
    }
    let off = vec![128.0 * (1.0 - a.contrast); k];
    let (m, b) = with_alpha(&m, &off, c);
    let x = img.cast(DType::F32)?;
    let identity = a.brightness == 1.0 && a.contrast == 1.0 && a.saturation == 1.0;
    let mut y = if identity {
        x
    } else {
        apply_matrix(&x, &m, &b)?
    };
    if a.gamma != 1.0 {
        // Per-channel exponent so alpha (exponent 1) passes through.
        let e: Vec<f32> = (0..c)
            .map(|i| if i < k { (1.0 / a.gamma) as f32 } else { 1.0 })
            .collect();
        let e = Tensor::from_vec(e, vec![c], img.device())?;
        y = y
            .clamp(0.0, 255.0)?
            .mul_scalar(1.0 / 255.0)?
            .pow(&e)?
            .mul_scalar(255.0)?;
    }
    to_u8(&y)
}

/// Luma of an RGB(A) image: `[H, W, 1]` for RGB, `[H, W, 2]` (luma, alpha)
/// for RGBA; grey images come back as they are.
pub fn grayscale(img: &Tensor) -> Result<Tensor> {
    let (_, _, c) = dims_u8("image.grayscale", img)?;
    if c <= 2 {
        return Ok(img.clone());
    }
    let mut m = vec![LUMA
        .iter()
        .copied()
        .chain((c == 4).then_some(0.0))
        .collect::<Vec<_>>()];
    if c == 4 {
        m.push(vec![0.0, 0.0, 0.0, 1.0]);
    }
    let b = vec![0.0; m.len()];
    to_u8(&apply_matrix(&img.cast(DType::F32)?, &m, &b)?)
}
