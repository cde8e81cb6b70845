//! Crop, flip and quarter-turn rotation. Crop and transpose are views (no
//! copy); a flip is an `index_select` with reversed indices, which every
//! backend runs and which fuses into the consumer's loads.

use super::{dims, invalid};
use crate::error::Result;
use crate::tensor::Tensor;

/// The axis a flip mirrors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlipAxis {
    /// Left ↔ right (mirror the columns).
    Horizontal,
    /// Top ↔ bottom (mirror the rows).
    Vertical,
}

impl FlipAxis {
    pub fn parse(s: &str) -> Option<FlipAxis> {
        match s {
            "h" | "horizontal" | "x" => Some(FlipAxis::Horizontal),
            "v" | "vertical" | "y" => Some(FlipAxis::Vertical),
            _ => None,
        }
    }
}

/// The `w` × `h` rectangle whose top-left pixel is (`x`, `y`).
pub fn crop(img: &Tensor, x: usize, y: usize, w: usize, h: usize) -> Result<Tensor> {
    let (ih, iw, _) = dims("image.crop", img)?;
    let fits = w > 0
        && h > 0
        && x.checked_add(w).is_some_and(|r| r <= iw)
        && y.checked_add(h).is_some_and(|b| b <= ih);
    if !fits {
        return Err(invalid(
            "image.crop",
            "rectangle",
            "a non-empty rectangle inside the image",
            format!("x={x} y={y} w={w} h={h} in a {iw}x{ih} image"),
        ));
    }
    img.narrow(0, y, h)?.narrow(1, x, w)
}

/// Mirrors the image along `axis`.
pub fn flip(img: &Tensor, axis: FlipAxis) -> Result<Tensor> {
    let (h, w, _) = dims("image.flip", img)?;
    let (ax, n) = match axis {
        FlipAxis::Horizontal => (1, w),
        FlipAxis::Vertical => (0, h),
    };
    let rev: Vec<i32> = (0..n as i32).rev().collect();
    let index = Tensor::from_vec(rev, vec![n], img.device())?;
    img.index_select(ax, &index)
}

/// Rotates by `k` quarter turns clockwise (negative `k` turns
/// counter-clockwise; any integer is taken modulo 4).
pub fn rotate90(img: &Tensor, k: i64) -> Result<Tensor> {
    dims("image.rotate90", img)?;
    match k.rem_euclid(4) {
        0 => Ok(img.clone()),
        // Clockwise: out[i][j] = in[H-1-j][i], the transpose mirrored left-right.
        1 => flip(&img.transpose(0, 1)?, FlipAxis::Horizontal),
        2 => flip(&flip(img, FlipAxis::Horizontal)?, FlipAxis::Vertical),
        _ => flip(&img.transpose(0, 1)?, FlipAxis::Vertical),
    }
}
