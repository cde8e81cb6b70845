//! Joining and indexing: concat, index_select, gather.

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::op::Op;
use crate::shape::normalize_axis;

impl Tensor {
    /// Joins tensors along `axis`; all other axes must match. Dtypes promote.
    pub fn concat(tensors: &[&Tensor], axis: isize) -> Result<Tensor> {
        let first = tensors.first().ok_or(Error::NoInputs { op: "concat" })?;
        let axis = normalize_axis("concat", axis, first.shape())?;
        let mut dtype = first.dtype();
        for t in tensors {
            Tensor::same_device("concat", first, t)?;
            let same = t.rank() == first.rank()
                && (0..t.rank()).all(|i| i == axis || t.shape()[i] == first.shape()[i]);
            if !same {
                return Err(Error::ConcatShape {
                    op: "concat",
                    axis,
                    shapes: tensors.iter().map(|t| t.shape().to_vec()).collect(),
                });
            }
            dtype = DType::promote(dtype, t.dtype());
        }
        let mut shape = first.shape().to_vec();
        shape[axis] = tensors.iter().map(|t| t.shape()[axis]).sum();
        let cast: Vec<Tensor> = tensors
            .iter()
            .map(|t| t.cast(dtype))
            .collect::<Result<_>>()?;
        let refs: Vec<&Tensor> = cast.iter().collect();
        Tensor::lazy(Op::Concat { axis }, &refs, dtype, &shape, first.device)
    }

    /// Picks entries `index[j]` (a 1-D i32 or u8 tensor) along `axis`.
    /// Out-of-range indices are an error when the result is computed.
    pub fn index_select(&self, axis: isize, index: &Tensor) -> Result<Tensor> {
        let device = Tensor::same_device("index_select", self, index)?;
        let axis = normalize_axis("index_select", axis, self.shape())?;
        check_index_dtype("index_select", index)?;
        if index.rank() != 1 {
            return Err(Error::GatherShape {
                op: "index_select",
                index: index.shape().to_vec(),
                source_shape: self.shape().to_vec(),
                axis,
            });
        }
        let mut shape = self.shape().to_vec();
        shape[axis] = index.shape()[0];
        Tensor::lazy(
            Op::IndexSelect { axis },
            &[self, index],
            self.dtype(),
            &shape,
            device,
        )
    }

    /// `out[i][j] = self[i][index[i][j]]` along `axis` (PyTorch's `gather`):
    /// `index` has the rank of `self` and no larger size on the other axes.
    pub fn gather(&self, axis: isize, index: &Tensor) -> Result<Tensor> {
        let device = Tensor::same_device("gather", self, index)?;
        let axis = normalize_axis("gather", axis, self.shape())?;
        check_index_dtype("gather", index)?;
        let fits = index.rank() == self.rank()
            && (0..self.rank()).all(|i| i == axis || index.shape()[i] <= self.shape()[i]);
        if !fits {
            return Err(Error::GatherShape {
                op: "gather",
                index: index.shape().to_vec(),
                source_shape: self.shape().to_vec(),
                axis,
            });
        }
        Tensor::lazy(
            Op::Gather { axis },
            &[self, index],
            self.dtype(),
            index.shape(),
            device,
        )
    }
}

fn check_index_dtype(op: &'static str, index: &Tensor) -> Result<()> {
    match index.dtype() {
        DType::I32 | DType::U8 => Ok(()),
        dtype => Err(Error::IndexDType { op, dtype }),
    }
}
