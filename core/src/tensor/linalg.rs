//! Matrix products with NumPy `matmul` rules: 1-D operands are promoted and
//! the added axis removed afterwards; batch axes broadcast.

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::op::Op;
use crate::shape::broadcast_shapes;

impl Tensor {
    /// `self @ rhs`. Transposed views go to the kernel as strides, not copies.
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        let device = Tensor::same_device("matmul", self, rhs)?;
        if self.rank() == 0 || rhs.rank() == 0 {
            return Err(Error::RankTooLow {
                op: "matmul",
                min: 1,
                shape: if self.rank() == 0 {
                    self.shape().to_vec()
                } else {
                    rhs.shape().to_vec()
                },
            });
        }
        let dtype = DType::promote(self.dtype(), rhs.dtype());
        if dtype == DType::Bool || dtype == DType::U8 {
            return Err(Error::UnsupportedDType {
                op: "matmul",
                dtype,
                why: "cast to i32 or a float dtype first",
            });
        }
        let a = if self.rank() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        }
        .cast(dtype)?;
        let b = if rhs.rank() == 1 {
            rhs.unsqueeze(1)?
        } else {
            rhs.clone()
        }
        .cast(dtype)?;
        let (ra, rb) = (a.rank(), b.rank());
        let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
        let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
        if k != k2 {
            return Err(Error::MatmulShape {
                op: "matmul",
                lhs: self.shape().to_vec(),
                rhs: rhs.shape().to_vec(),
            });
        }
        let batch = broadcast_shapes("matmul", &a.shape()[..ra - 2], &b.shape()[..rb - 2])?;
        let with = |x: usize, y: usize| {
            let mut s = batch.clone();
            s.extend([x, y]);
            s
        };
        let a = a.expand(with(m, k))?;
        let b = b.expand(with(k, n))?;
        let mut out = Tensor::lazy(Op::Matmul, &[&a, &b], dtype, &with(m, n), device)?;
        if rhs.rank() == 1 {
            out = out.squeeze(-1)?;
        }
        if self.rank() == 1 {
            out = out.squeeze(if rhs.rank() == 1 { -1 } else { -2 })?;
        }
        Ok(out)
    }
}
