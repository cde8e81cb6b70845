//! The input gradient of a convolution as a convolution.
//!
//! conv2d multiplies the windows of its padded input (im2col) by the weight
//! matrix, so the gradient that reaches the windows view is
//! `g = dY · W` reshaped to `[n, oh, ow, kh, kw, c]`: nine times the input
//! per 3x3 window, which the general window gradient then pads and sums
//! over the window axes (two padded copies of that nine-fold tensor). For
//! stride 1 the same sum is a convolution of `dY`, zero-padded by
//! `(k - 1)·d` on each side, with the kernel flipped and its channel axes
//! swapped: `dx[b, Y, X, ch] = Σ dY[b, Y - i·d, X - j·d, o] · W[o, i, j, ch]`.
//! That pads only `dY` and lets the matmul produce `dx` directly, as
//! cuDNN's backward-data does. Larger strides spread `dY` out first.

use crate::autograd::views::{pad_axis, spread};
use crate::error::Result;
use crate::graph::node::State;
use crate::graph::op::{Op, ViewOp};
use crate::nn::{Conv2dOptions, DataLayout};
use crate::tensor::Tensor;

/// `(dY as [n*oh*ow, o], W as [o, kh*kw*c])` when `g` is their product
/// reshaped (the windows' gradient that conv2d's matmul produced).
fn product_factors(g: &Tensor) -> Option<(Tensor, Tensor)> {
    let device = *g.device();
    let mut node = g.node().clone();
    loop {
        let State::Lazy { op, inputs } = node.state() else {
            return None;
        };
        match op {
            Op::View(ViewOp::Reshape(_)) | Op::Contiguous => node = inputs.first()?.clone(),
            Op::Matmul => {
                let [a, b] = &inputs[..] else {
                    return None;
                };
                let t = |n: &std::sync::Arc<crate::graph::node::Node>| Tensor {
                    node: n.clone(),
                    device,
                };
                return Some((t(a), t(b)));
            }
            _ => return None,
        }
    }
}

/// `dx` of the padded input (`[n, hp, wp, c]`) for windows with
/// `(output size, stride, kernel size, dilation)` along H and W, or `None`
/// when `g` is not conv2d's matmul gradient of such windows. Strides above
/// 1 first spread `dY` out (zeros between its rows and columns), and rows
/// or columns of the input that no window reached get zeros after. 1x1
/// kernels keep the general path: their window sum is a copy, and the
/// convolution would multiply the spread zeros.
pub(super) fn input_gradient(
    g: &Tensor,
    full: [usize; 2],
    axes: [(usize, usize, usize, usize); 2],
) -> Result<Option<Tensor>> {
    let [(oh, _, kh, dh), (ow, _, kw, dw)] = axes;
    let gs = g.shape();
    let (n, c) = (gs[0], gs[5]);
    let k = kh * kw * c;
    if kh * kw == 1 {
        return Ok(None);
    }
    let Some((dy, w)) = product_factors(g) else {
        return Ok(None);
    };
    let o = w.shape()[0];
    if dy.shape() != [n * oh * ow, o]
        || w.shape() != [o, k]
        || dy.dtype() != g.dtype()
        || w.dtype() != g.dtype()
    {
        return Ok(None);
    }
    let mut dy = dy.reshape([n, oh, ow, o])?;
    for (axis, ((out, s, k, d), full)) in axes.into_iter().zip(full).enumerate() {
        let axis = axis + 1;
        let len = (out - 1) * s + 1;
        if s > 1 {
            dy = spread(&dy, axis, s)?.narrow(axis as isize, 0, len)?;
        }
        // The windows cover `len + (k - 1)·d` rows of the padded input.
        let Some(extra) = full.checked_sub(len + (k - 1) * d) else {
            return Ok(None);
        };
        dy = pad_axis(&dy, axis, 0, extra)?;
    }
    // W'[ch, o, i, j] = W[o, kh-1-i, kw-1-j, ch]: a view with backward
    // steps along the window axes.
    let w = w.contiguous()?;
    let base = w.layout().offset + (kh - 1) * kw * c + (kw - 1) * c;
    let flipped = w.as_strided(
        &[c, o, kh, kw],
        &[1, k as isize, -((kw * c) as isize), -(c as isize)],
        base,
    )?;
    let opts = Conv2dOptions {
        stride: (1, 1),
        padding: ((kh - 1) * dh, (kw - 1) * dw),
        dilation: (dh, dw),
        layout: DataLayout::Nhwc,
    };
    Ok(Some(dy.conv2d(&flipped, None, opts)?))
}
