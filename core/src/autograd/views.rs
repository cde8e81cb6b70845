//! VJPs of views: each one maps the gradient of the view back onto the
//! elements of its input (inverse permute, zero padding, sums over
//! broadcast axes, and a gather by storage position for `as_strided`).

use crate::autograd::{conv_grad, sum_factors};
use crate::error::{Error, Result};
use crate::graph::op::ViewOp;
use crate::tensor::Tensor;

pub(super) fn vjp(op: &ViewOp, y: &Tensor, x: &Tensor, g: &Tensor) -> Result<Tensor> {
    match op {
        ViewOp::Reshape(_) => g.reshape(x.shape().to_vec()),
        // `of_op` gives a detached view's input no gradient; as a map of
        // `g` onto the input this is the identity.
        ViewOp::Detach => Ok(g.clone()),
        ViewOp::Permute(axes) => {
            let mut inverse = vec![0; axes.len()];
            for (i, &a) in axes.iter().enumerate() {
                inverse[a] = i;
            }
            g.permute(&inverse)
        }
        ViewOp::Narrow { axis, start, len } => {
            let after = x.shape()[*axis] - start - len;
            pad_axis(g, *axis, *start, after)
        }
        ViewOp::Expand(_) => sum_to(g, x.shape()),
        ViewOp::AsStrided(_) | ViewOp::Composed(_) => as_strided(y, x, g),
    }
}

/// Sums `g` over the axes a broadcast to its shape added or stretched, so
/// that the result has `shape`.
pub(crate) fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.rank() - shape.len();
    let axes: Vec<isize> = (0..g.rank())
        .filter(|&i| i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1))
        .map(|i| i as isize)
        .collect();
    let summed = if axes.is_empty() {
        g.clone()
    } else {
        match sum_factors::factored_sum(g, &axes)? {
            Some(s) => s,
            None => g.sum(&axes, true)?,
        }
    };
    summed.reshape(shape.to_vec())
}

/// `y` reads storage positions of `x`'s root; each element of `x` gets the
/// sum of the gradients of the `y` elements that read its position. The
/// positions are known when the graph is built, so this is an index_select
/// of the flat gradient (padded with one zero for "nobody read this") and a
/// sum over the largest number of readers of one position.
pub(super) fn as_strided(y: &Tensor, x: &Tensor, g: &Tensor) -> Result<Tensor> {
    if let Some(w) = Windows::of(y, x) {
        return w.gradient(g);
    }
    let pos_x = x.layout().indices();
    // Readers of each position, as a dense table (positions are bounded by
    // the root's storage length): counts first, then the reader lists.
    let pos_y = y.layout().indices();
    let span = pos_x.iter().chain(&pos_y).max().map_or(0, |m| m + 1);
    let mut owned = vec![false; span];
    for &p in &pos_x {
        if std::mem::replace(&mut owned[p], true) {
            return Err(Error::InvalidArgument {
                op: "as_strided backward",
                what: "input",
                expected: "a view whose elements do not overlap (make it contiguous first)",
                got: format!("{:?} with strides {:?}", x.shape(), x.layout().strides),
            });
        }
    }
    let mut count = vec![0u32; span];
    for &p in &pos_y {
        count[p] += 1;
    }
    let most = pos_x.iter().map(|&p| count[p]).max().unwrap_or(0) as usize;
    if most == 0 {
        return x.zeros_like();
    }
    let mut start = vec![0usize; span + 1];
    for p in 0..span {
        start[p + 1] = start[p] + count[p] as usize;
    }
    let mut fill = start.clone();
    let mut readers = vec![0i32; pos_y.len()];
    for (j, &p) in pos_y.iter().enumerate() {
        readers[fill[p]] = j as i32;
        fill[p] += 1;
    }
    let none = y.numel() as i32; // the appended zero
    let mut index = Vec::with_capacity(pos_x.len() * most);
    for &p in &pos_x {
        let r = &readers[start[p]..start[p + 1]];
        index.extend_from_slice(r);
        index.extend(std::iter::repeat_n(none, most - r.len()));
    }
    let index = Tensor::from_vec(index, [pos_x.len() * most], g.device())?;
    let flat = Tensor::concat(
        &[
            &g.reshape([g.numel()])?,
            &Tensor::zeros([1], g.dtype(), g.device())?,
        ],
        0,
    )?;
    let picked = flat.index_select(0, &index)?;
    let per = if most == 1 {
        picked
    } else {
        picked.reshape([pos_x.len(), most])?.sum(&[1], false)?
    };
    per.reshape(x.shape().to_vec())
}

/// The sliding-window view that conv2d and pooling take of a contiguous
/// NHWC tensor `x` = `[n, hp, wp, c]`: `y` = `[n, oh, ow, kh, kw, c]` with
/// `y[b, oy, ox, i, j, ch] = x[b, oy*sh + i*dh, ox*sw + j*dw, ch]`.
///
/// Its gradient (col2im) is a sum over the window axes of a view of the
/// incoming gradient, so it is built from graph ops like any other: the
/// general gather below would build index tables on the host for every
/// element of the windows at every step (hundreds of millions of entries
/// for a ResNet layer at batch 256) and upload them.
struct Windows {
    hp: usize,
    wp: usize,
    /// (output size, stride, kernel size, dilation) along H, then W.
    axes: [(usize, usize, usize, usize); 2],
}

impl Windows {
    fn of(y: &Tensor, x: &Tensor) -> Option<Windows> {
        let (xl, yl) = (x.layout(), y.layout());
        if x.rank() != 4 || y.rank() != 6 || !xl.is_contiguous() || yl.offset != xl.offset {
            return None;
        }
        let [n, hp, wp, c] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
        let ys = y.shape();
        let [oh, ow, kh, kw] = [ys[1], ys[2], ys[3], ys[4]];
        if ys[0] != n || ys[5] != c || y.numel() == 0 {
            return None;
        }
        let st = &yl.strides;
        let (row, px) = ((wp * c) as isize, c as isize);
        // A stride that is a positive multiple of `unit`, as that multiple.
        let step = |s: isize, unit: isize| (s > 0 && s % unit == 0).then(|| (s / unit) as usize);
        let (sh, sw) = (step(st[1], row)?, step(st[2], px)?);
        let (dh, dw) = (step(st[3], row)?, step(st[4], px)?);
        let sample = (hp * wp * c) as isize;
        let fits = (oh - 1) * sh + (kh - 1) * dh < hp && (ow - 1) * sw + (kw - 1) * dw < wp;
        (st[0] == sample && st[5] == 1 && fits).then_some(Windows {
            hp,
            wp,
            axes: [(oh, sh, kh, dh), (ow, sw, kw, dw)],
        })
    }

    /// `dx[b, Y, X, ch] = sum over i, j of g[b, (Y - i*dh)/sh, (X - j*dw)/sw, i, j, ch]`
    /// (terms whose division is inexact or out of range are 0). `g` is
    /// spread out by the strides (zeros between), padded by `(k-1)*d`
    /// in front, and read through a view whose window axes step backwards
    /// along H and W by the dilation; the gradient is its sum over them.
    fn gradient(&self, g: &Tensor) -> Result<Tensor> {
        if let Some(dx) = conv_grad::input_gradient(g, [self.hp, self.wp], self.axes)? {
            return Ok(dx);
        }
        let mut gp = g.clone();
        for (axis, (&(o, s, k, d), full)) in self.axes.iter().zip([self.hp, self.wp]).enumerate() {
            let axis = axis + 1;
            let spread = spread(&gp, axis, s)?;
            let len = (o - 1) * s + 1;
            let spread = spread.narrow(axis as isize, 0, len)?;
            gp = pad_axis(&spread, axis, (k - 1) * d, full - len)?;
        }
        let gp = gp.contiguous()?;
        let [(_, _, kh, dh), (_, _, kw, dw)] = self.axes;
        let (n, c) = (g.shape()[0], g.shape()[5]);
        let (hh, ww) = (self.hp + (kh - 1) * dh, self.wp + (kw - 1) * dw);
        let s_w = (kh * kw * c) as isize;
        let s_h = ww as isize * s_w;
        let (s_i, s_j) = ((kw * c) as isize, c as isize);
        let base = gp.layout().offset + (kh - 1) * dh * s_h as usize + (kw - 1) * dw * s_w as usize;
        let strides = [
            hh as isize * s_h,
            s_h,
            s_w,
            s_i - dh as isize * s_h,
            s_j - dw as isize * s_w,
            1,
        ];
        // One reduction over the window axes. (Summing the kh*kw window views
        // as one elementwise kernel instead let the fusion pass inline it
        // into the batch-norm reductions that read it, which then re-read
        // kh*kw strided values per element and stage: 1.55x slower steps.)
        let view = gp.as_strided(&[n, self.hp, self.wp, kh, kw, c], &strides, base)?;
        view.sum(&[3, 4], false)
    }
}

/// `x` with `s - 1` zeros after every element along `axis` (length × s).
pub(super) fn spread(x: &Tensor, axis: usize, s: usize) -> Result<Tensor> {
    if s == 1 {
        return Ok(x.clone());
    }
    let mut shape = x.shape().to_vec();
    let lifted = x.unsqueeze(axis as isize + 1)?;
    let mut gap = lifted.shape().to_vec();
    gap[axis + 1] = s - 1;
    let zeros = Tensor::zeros(gap, x.dtype(), x.device())?;
    shape[axis] *= s;
    Tensor::concat(&[&lifted, &zeros], axis as isize + 1)?.reshape(shape)
}

/// `x` with `before` and `after` zeros along `axis`.
pub(super) fn pad_axis(x: &Tensor, axis: usize, before: usize, after: usize) -> Result<Tensor> {
    let zeros = |len: usize| {
        let mut s = x.shape().to_vec();
        s[axis] = len;
        Tensor::zeros(s, x.dtype(), x.device())
    };
    let mut parts = Vec::with_capacity(3);
    if before > 0 {
        parts.push(zeros(before)?);
    }
    parts.push(x.clone());
    if after > 0 {
        parts.push(zeros(after)?);
    }
    if parts.len() == 1 {
        return Ok(x.clone());
    }
    let refs: Vec<&Tensor> = parts.iter().collect();
    Tensor::concat(&refs, axis as isize)
}
