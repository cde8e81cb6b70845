//! Reductions over any set of axes. The graph op always keeps reduced axes
//! (size 1); `keepdim = false` adds a squeezing reshape view on top.

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::op::{Op, ReduceOp};
use crate::shape::{normalize_axes, normalize_axis};

impl Tensor {
    fn reduce(&self, op: ReduceOp, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let axes = normalize_axes(op.name(), axes, self.shape())?;
        let n: usize = axes.iter().map(|&a| self.shape()[a]).product();
        if n == 0 && op != ReduceOp::Sum {
            return Err(Error::InvalidArgument {
                op: op.name(),
                what: "reduced axes",
                expected: "at least one element",
                got: format!("shape {:?} over axes {axes:?}", self.shape()),
            });
        }
        let (x, dtype) = match op {
            ReduceOp::Sum if !self.dtype().is_float() => (self.cast(DType::I32)?, DType::I32),
            ReduceOp::ArgMax => (self.clone(), DType::I32),
            _ => (self.clone(), self.dtype()),
        };
        let kept: Vec<usize> = x
            .shape()
            .iter()
            .enumerate()
            .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
            .collect();
        let out = Tensor::lazy(
            Op::Reduce {
                op,
                axes: axes.clone(),
            },
            &[&x],
            dtype,
            &kept,
            x.device,
        )?;
        if keepdim {
            return Ok(out);
        }
        let squeezed: Vec<usize> = x
            .shape()
            .iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, &d)| d)
            .collect();
        out.reshape(squeezed)
    }

    /// Sum over `axes` (empty: all axes). Integer and bool inputs sum in i32.
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Sum, axes, keepdim)
    }

    /// Largest value over `axes` (empty: all).
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Max, axes, keepdim)
    }

    /// Smallest value over `axes` (empty: all).
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Min, axes, keepdim)
    }

    /// Mean over `axes` (empty: all). Integer inputs give f32. f16/bf16
    /// inputs are scaled by 1/n in f32 (1/n itself is not exact in bf16).
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let x = self.cast(self.dtype().to_float())?;
        let n = count(&x, axes)?;
        let sum = x.sum(axes, keepdim)?;
        match x.dtype() {
            DType::F16 | DType::BF16 => sum
                .cast(DType::F32)?
                .mul_scalar(1.0 / n as f64)?
                .cast(x.dtype()),
            _ => sum.mul_scalar(1.0 / n as f64),
        }
    }

    /// Variance over `axes` with `correction` (0: population, 1: sample, as
    /// PyTorch's `var(correction=)`). Fuses with the mean into one kernel.
    pub fn var(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor> {
        let x = self.cast(self.dtype().to_float())?;
        let n = count(&x, axes)?;
        let mean = x.mean(axes, true)?;
        let dev = x.sub(&mean)?;
        let denom = n.saturating_sub(correction) as f64;
        dev.mul(&dev)?.sum(axes, keepdim)?.mul_scalar(1.0 / denom)
    }

    /// Index of the first maximum along `axis` (`None`: over all elements,
    /// flattened row-major), as i32.
    pub fn argmax(&self, axis: Option<isize>, keepdim: bool) -> Result<Tensor> {
        match axis {
            Some(a) => {
                let a = normalize_axis("argmax", a, self.shape())? as isize;
                self.reduce(ReduceOp::ArgMax, &[a], keepdim)
            }
            None if self.rank() == 0 => self.reshape([1])?.reduce(ReduceOp::ArgMax, &[0], keepdim),
            None => self.reduce(ReduceOp::ArgMax, &[], keepdim),
        }
    }
}

fn count(x: &Tensor, axes: &[isize]) -> Result<usize> {
    let axes = normalize_axes("mean", axes, x.shape())?;
    Ok(axes.iter().map(|&a| x.shape()[a]).product())
}
