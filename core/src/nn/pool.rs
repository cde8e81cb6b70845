//! Max and average pooling over 2-D windows: a max/mean reduction over the
//! window axes of a view. Non-overlapping windows (stride = kernel, no
//! padding) are a plain reshape view; others an `as_strided` view of the
//! padded input.

use super::conv::{from_nhwc, patches_nhwc, to_nhwc, Conv2dOptions};
use crate::error::Result;
use crate::tensor::Tensor;

impl Tensor {
    /// Max over `kernel` windows (padding counts as -inf, as PyTorch's).
    pub fn max_pool2d(&self, kernel: (usize, usize), opts: Conv2dOptions) -> Result<Tensor> {
        pool(self, kernel, opts, true)
    }

    /// Mean over `kernel` windows (padding counts as 0 and is included in
    /// the divisor, PyTorch's `count_include_pad=True`).
    pub fn avg_pool2d(&self, kernel: (usize, usize), opts: Conv2dOptions) -> Result<Tensor> {
        pool(self, kernel, opts, false)
    }
}

fn pool(x: &Tensor, (kh, kw): (usize, usize), opts: Conv2dOptions, max: bool) -> Result<Tensor> {
    let op = if max { "max_pool2d" } else { "avg_pool2d" };
    super::layers::expect_rank(op, x, 4)?;
    let x = to_nhwc(x, opts.layout)?;
    let (n, h, w, c) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let tiles = opts.stride == (kh, kw)
        && opts.padding == (0, 0)
        && opts.dilation == (1, 1)
        && h % kh == 0
        && w % kw == 0;
    let reduce = |t: &Tensor, axes: &[isize]| {
        if max {
            t.max(axes, false)
        } else {
            t.mean(axes, false)
        }
    };
    let y = if tiles {
        // [n, h/kh, kh, w/kw, kw, c]: windows as axes 2 and 4.
        let v = x.reshape([n, h / kh, kh, w / kw, kw, c])?;
        reduce(&v, &[2, 4])?
    } else {
        let pad = if max { f64::NEG_INFINITY } else { 0.0 };
        let (p, _, _) = patches_nhwc(op, &x, (kh, kw), opts, pad)?;
        reduce(&p, &[3, 4])?
    };
    from_nhwc(&y, opts.layout)
}
