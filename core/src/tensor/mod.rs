//! The user-facing [`Tensor`]: every method records a graph node; nothing
//! runs until a result is read (`to_vec`, `to_ndarray`, `item`, `realize`).
//!
//! ```
//! use fusegraph_core::{Device, DType, Tensor};
//! let a = Tensor::from_vec(vec![1.0f32, -2.0, 3.0, -4.0], [2, 2], &Device::Cpu)?;
//! let b = Tensor::full(0.5, [2], DType::F32, &Device::Cpu)?;
//! let y = a.mul(&b)?.add(&a)?.relu()?; // one fused kernel
//! assert_eq!(y.to_vec::<f32>()?, vec![1.5, 0.0, 4.5, 0.0]);
//! # Ok::<(), fusegraph_core::Error>(())
//! ```

mod assign;
mod create;
mod decomp;
mod elementwise;
mod index;
mod interop;
mod linalg;
mod nn;
mod reduce;
mod svd_refine;
mod view;

use std::sync::Arc;

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::node::{Node, State};
use crate::graph::op::Op;
use crate::layout::Layout;

/// An n-dimensional array on a [`Device`], backed by a lazy graph node.
/// Cloning is cheap (an `Arc`); `Tensor` is `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub(crate) node: Arc<Node>,
    pub(crate) device: Device,
}

impl Tensor {
    pub fn shape(&self) -> &[usize] {
        self.node.shape()
    }

    pub fn dims(&self) -> &[usize] {
        self.node.shape()
    }

    pub fn rank(&self) -> usize {
        self.node.layout.rank()
    }

    pub fn numel(&self) -> usize {
        self.node.layout.numel()
    }

    pub fn dtype(&self) -> DType {
        self.node.dtype
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The view this tensor is of its storage (shape, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.node.layout
    }

    /// True when the elements are dense and row-major in storage.
    pub fn is_contiguous(&self) -> bool {
        self.node.layout.is_contiguous()
    }

    /// True once the value has been computed.
    pub fn is_realized(&self) -> bool {
        self.node.is_ready()
    }

    /// The graph node (for the passes, the reference path and tests).
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// Computes this tensor (and everything it needs) now.
    pub fn realize(&self) -> Result<&Self> {
        crate::runtime::realize(std::slice::from_ref(self))?;
        Ok(self)
    }

    /// Computes several tensors in one graph, so shared work runs once.
    pub fn realize_all(tensors: &[Tensor]) -> Result<()> {
        crate::runtime::realize(tensors)
    }

    /// A new lazy, non-view node of `shape`.
    pub(crate) fn lazy(
        op: Op,
        inputs: &[&Tensor],
        dtype: DType,
        shape: &[usize],
        device: Device,
    ) -> Result<Tensor> {
        let layout = Layout::contiguous(shape);
        let numel = crate::shape::Shape::new(shape.to_vec())
            .checked_numel(op.name(), dtype.size_in_bytes())?;
        let inputs = inputs.iter().map(|t| t.node.clone()).collect();
        Ok(Tensor {
            node: Node::new(dtype, layout, numel, State::Lazy { op, inputs }),
            device,
        })
    }

    /// Checks that all operands share one device.
    pub(crate) fn same_device(op: &'static str, a: &Tensor, b: &Tensor) -> Result<Device> {
        if a.device != b.device {
            return Err(Error::DeviceMismatch {
                op,
                lhs: a.device.name(),
                rhs: b.device.name(),
            });
        }
        Ok(a.device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn tensor_is_send_and_sync() {
        assert_send_sync::<Tensor>();
    }
}
