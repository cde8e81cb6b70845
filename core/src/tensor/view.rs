//! Views: new layouts over the same storage, never a copy (except `reshape`
//! of a layout that cannot be viewed, which copies as PyTorch does).

use super::Tensor;
use crate::error::{Error, Result};
use crate::graph::node::{Node, State};
use crate::graph::op::{Op, ViewOp};
use crate::layout::Layout;
use crate::shape::{normalize_axis, Shape};

impl Tensor {
    /// A view node with `layout` over this tensor's storage. A view of a
    /// realized tensor is realized at once: it shares the storage.
    /// The view's element count must fit in `usize` (on wasm32 a count past
    /// 2^32 - 1 would wrap to a small number), else [`Error::TooLarge`].
    fn view_node(&self, op: ViewOp, layout: Layout) -> Result<Tensor> {
        layout.checked_numel(op.name())?;
        let state = match self.node.storage() {
            Some(s) => State::Ready(s),
            None => State::Lazy {
                op: Op::View(op),
                inputs: vec![self.node.clone()],
            },
        };
        Ok(Tensor {
            node: Node::new(self.dtype(), layout, self.node.storage_len, state),
            device: self.device,
        })
    }

    /// The same elements with a new shape; one axis may be `usize::MAX`
    /// ("infer", like `-1` in NumPy). A view when the strides allow it,
    /// otherwise a contiguous copy first.
    pub fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let mut dims = shape.into().0;
        let numel = self.numel();
        let infer: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == usize::MAX).collect();
        let bad = |dims: &[usize]| Error::Reshape {
            op: "reshape",
            from: self.shape().to_vec(),
            from_elems: numel,
            to: dims.to_vec(),
            to_elems: dims.iter().filter(|&&d| d != usize::MAX).product(),
        };
        if infer.len() > 1 {
            return Err(bad(&dims));
        }
        if let Some(&i) = infer.first() {
            let known: usize = dims.iter().filter(|&&d| d != usize::MAX).product();
            if known == 0 || numel % known != 0 {
                return Err(bad(&dims));
            }
            dims[i] = numel / known;
        }
        if dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(numel) {
            return Err(bad(&dims));
        }
        if dims == self.shape() {
            return Ok(self.clone());
        }
        match self.layout().reshape_view(&dims) {
            Some(l) => self.view_node(ViewOp::Reshape(dims), l),
            None => self.copy_contiguous()?.reshape(dims),
        }
    }

    /// Flattens to one axis.
    pub fn flatten(&self) -> Result<Tensor> {
        self.reshape([self.numel()])
    }

    /// Reorders axes: axis `i` of the result is axis `axes[i]` of `self`.
    pub fn permute(&self, axes: &[usize]) -> Result<Tensor> {
        let l = self.layout().permute(axes)?;
        self.view_node(ViewOp::Permute(axes.to_vec()), l)
    }

    /// Swaps two axes (negative counts from the end).
    pub fn transpose(&self, a: isize, b: isize) -> Result<Tensor> {
        let a = normalize_axis("transpose", a, self.shape())?;
        let b = normalize_axis("transpose", b, self.shape())?;
        let mut axes: Vec<usize> = (0..self.rank()).collect();
        axes.swap(a, b);
        self.permute(&axes)
    }

    /// Transpose of the last two axes (a no-op on rank < 2, as in PyTorch's `.mT` for matrices).
    pub fn t(&self) -> Result<Tensor> {
        if self.rank() < 2 {
            return Ok(self.clone());
        }
        self.transpose(-2, -1)
    }

    /// `len` elements of `axis` from `start`.
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Tensor> {
        let l = self.layout().narrow(axis, start, len)?;
        let axis = normalize_axis("narrow", axis, self.shape())?;
        self.view_node(ViewOp::Narrow { axis, start, len }, l)
    }

    /// Broadcasts size-1 axes (and new leading axes) to `shape` with stride 0.
    pub fn expand(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into().0;
        if shape == self.shape() {
            return Ok(self.clone());
        }
        let l = self.layout().expand(&shape)?;
        self.view_node(ViewOp::Expand(shape), l)
    }

    /// Same as [`Tensor::expand`], NumPy's name.
    pub fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        self.expand(shape)
    }

    /// Removes a size-1 axis.
    pub fn squeeze(&self, axis: isize) -> Result<Tensor> {
        let l = self.layout().squeeze(axis)?;
        self.view_node(ViewOp::Reshape(l.shape.clone()), l)
    }

    /// Inserts a size-1 axis at `axis` (`-1` appends).
    pub fn unsqueeze(&self, axis: isize) -> Result<Tensor> {
        let l = self.layout().unsqueeze(axis)?;
        self.view_node(ViewOp::Reshape(l.shape.clone()), l)
    }

    /// An arbitrary strided view of this tensor's storage, as PyTorch's
    /// `as_strided`: `offset` and `strides` count elements of the storage.
    /// Every reachable element is checked to lie inside it.
    pub fn as_strided(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Tensor> {
        let l = Layout::as_strided(shape, strides, offset, self.node.storage_len)?;
        self.view_node(ViewOp::AsStrided(l.clone()), l)
    }

    /// The same values as a view that gradients do not flow back through
    /// (PyTorch's `detach`): [`crate::autograd::grad`] treats it as a
    /// constant. No copy is made.
    pub fn detach(&self) -> Result<Tensor> {
        self.view_node(ViewOp::Detach, self.layout().clone())
    }

    /// This tensor with dense row-major storage: itself when it already is
    /// contiguous, otherwise a copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.copy_contiguous()
    }

    /// Always a fresh contiguous copy.
    pub(crate) fn copy_contiguous(&self) -> Result<Tensor> {
        Tensor::lazy(
            Op::Contiguous,
            &[self],
            self.dtype(),
            self.shape(),
            self.device,
        )
    }
}
