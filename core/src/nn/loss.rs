//! Losses.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// Mean cross-entropy of `[N, classes]` logits against `[N]` integer
    /// class labels (i32 or u8), as PyTorch's `cross_entropy`: one
    /// log-softmax row kernel and a masked mean; the labels select through a
    /// one-hot mask, so the backward is elementwise too.
    pub fn cross_entropy(&self, labels: &Tensor) -> Result<Tensor> {
        let op = "cross_entropy";
        if self.rank() != 2 || labels.rank() != 1 || labels.shape()[0] != self.shape()[0] {
            return Err(Error::InvalidArgument {
                op,
                what: "logits and labels",
                expected: "[N, classes] and [N]",
                got: format!("{:?} and {:?}", self.shape(), labels.shape()),
            });
        }
        if !matches!(labels.dtype(), DType::I32 | DType::U8) {
            return Err(Error::IndexDType {
                op,
                dtype: labels.dtype(),
            });
        }
        let classes = self.shape()[1];
        let logp = self.log_softmax(-1)?;
        let ks = Tensor::arange(0.0, classes as f64, 1.0, DType::I32, self.device())?;
        let hit = labels.cast(DType::I32)?.unsqueeze(-1)?.eq(&ks)?;
        let zero = Tensor::scalar(0.0, logp.dtype(), self.device())?;
        let picked = Tensor::where_cond(&hit, &logp, &zero)?;
        picked
            .sum(&[], false)?
            .mul_scalar(-1.0 / self.shape()[0].max(1) as f64)
    }

    /// Mean squared error against `target` (broadcast to this shape).
    pub fn mse(&self, target: &Tensor) -> Result<Tensor> {
        let d = self.sub(target)?;
        d.mul(&d)?.mean(&[], false)
    }
}
