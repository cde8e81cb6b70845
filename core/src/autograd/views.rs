//! VJPs of views: each one maps the gradient of the view back onto the
//! elements of its input (inverse permute, zero padding, sums over
//! broadcast axes, and a gather by storage position for `as_strided`).

use crate::error::{Error, Result};
use crate::graph::op::ViewOp;
use crate::tensor::Tensor;

pub(super) fn vjp(op: &ViewOp, y: &Tensor, x: &Tensor, g: &Tensor) -> Result<Tensor> {
    match op {
        ViewOp::Reshape(_) => g.reshape(x.shape().to_vec()),
        ViewOp::Permute(axes) => {
            let mut inverse = vec![0; axes.len()];
            for (i, &a) in axes.iter().enumerate() {
                inverse[a] = i;
            }
            g.permute(&inverse)
        }
        ViewOp::Narrow { axis, start, len } => {
            let size = x.shape()[*axis];
            let zeros = |n: usize| {
                let mut s = g.shape().to_vec();
                s[*axis] = n;
                Tensor::zeros(s, g.dtype(), g.device())
            };
            let mut parts = Vec::new();
            if *start > 0 {
                parts.push(zeros(*start)?);
            }
            parts.push(g.clone());
            if start + len < size {
                parts.push(zeros(size - start - len)?);
            }
            if parts.len() == 1 {
                return Ok(g.clone());
            }
            let refs: Vec<&Tensor> = parts.iter().collect();
            Tensor::concat(&refs, *axis as isize)
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
        g.sum(&axes, true)?
    };
    summed.reshape(shape.to_vec())
}

/// `y` reads storage positions of `x`'s root; each element of `x` gets the
/// sum of the gradients of the `y` elements that read its position. The
/// positions are known when the graph is built, so this is an index_select
/// of the flat gradient (padded with one zero for "nobody read this") and a
/// sum over the largest number of readers of one position.
pub(super) fn as_strided(y: &Tensor, x: &Tensor, g: &Tensor) -> Result<Tensor> {
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
