//! Softmax, log-softmax and layer norm, written with primitive ops: the
//! reduction-fusion pass turns each into one row kernel.

use super::Tensor;
use crate::error::{Error, Result};
use crate::shape::normalize_axis;

impl Tensor {
    /// `exp(x - max) / sum(exp(x - max))` along `axis`.
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        let x = self.cast(self.dtype().to_float())?;
        let axis = normalize_axis("softmax", axis, x.shape())? as isize;
        let m = x.max(&[axis], true)?;
        let e = x.sub(&m)?.exp()?;
        // Times the row's reciprocal, as PyTorch's CPU kernel does: one
        // division per row instead of one per element (at most 1 ulp apart).
        let one = Tensor::full(1.0, (), e.dtype(), e.device())?;
        e.mul(&one.div(&e.sum(&[axis], true)?)?)
    }

    /// `x - max - log(sum(exp(x - max)))` along `axis`.
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor> {
        let x = self.cast(self.dtype().to_float())?;
        let axis = normalize_axis("log_softmax", axis, x.shape())? as isize;
        let m = x.max(&[axis], true)?;
        let shifted = x.sub(&m)?;
        shifted.sub(&shifted.exp()?.sum(&[axis], true)?.log()?)
    }

    /// Normalises over the last `normalized_dims` axes, then scales and
    /// shifts by `weight` and `bias` (shape = those axes), as `nn.LayerNorm`.
    pub fn layer_norm(
        &self,
        normalized_dims: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        if normalized_dims == 0 || normalized_dims > self.rank() {
            return Err(Error::InvalidArgument {
                op: "layer_norm",
                what: "normalized_dims",
                expected: "between 1 and the rank",
                got: format!("{normalized_dims} for shape {:?}", self.shape()),
            });
        }
        let x = self.cast(self.dtype().to_float())?;
        let axes: Vec<isize> = (x.rank() - normalized_dims..x.rank())
            .map(|a| a as isize)
            .collect();
        let tail = &x.shape()[x.rank() - normalized_dims..];
        for (name, p) in [("weight", weight), ("bias", bias)] {
            if let Some(p) = p {
                if p.shape() != tail {
                    return Err(Error::InvalidArgument {
                        op: "layer_norm",
                        what: name,
                        expected: "the normalized shape",
                        got: format!("{:?} for normalized shape {tail:?}", p.shape()),
                    });
                }
            }
        }
        let mean = x.mean(&axes, true)?;
        let centered = x.sub(&mean)?;
        let var = centered.mul(&centered)?.mean(&axes, true)?;
        let mut y = centered.mul(&var.add_scalar(eps)?.rsqrt()?)?;
        if let Some(w) = weight {
            y = y.mul(w)?;
        }
        if let Some(b) = bias {
            y = y.add(b)?;
        }
        Ok(y)
    }
}
