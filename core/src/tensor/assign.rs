//! In-place assignment: [`Tensor::assign`] writes new values into the
//! buffer a realized tensor already holds. Training state (parameters,
//! optimiser moments, batch-norm statistics) lives in such buffers when a
//! step is recorded once and replayed (a CUDA graph): the replayed kernels
//! read and write fixed device addresses, so each step's results must land
//! where the next step reads them.

use std::sync::Arc;

use crate::backend::Storage;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// True when this tensor is realized, contiguous from offset 0 and as
    /// long as its storage: a buffer [`Tensor::assign`] can write into.
    pub fn owns_dense_buffer(&self) -> bool {
        let l = self.layout();
        l.is_contiguous()
            && l.offset == 0
            && self.node.storage().is_some_and(|s| s.len() == self.numel())
    }

    /// A realized tensor with the same values in a buffer of its own
    /// (`self` when it already owns one; a copy otherwise, e.g. for a
    /// strided view or a slice of a larger buffer).
    pub fn to_owned_buffer(&self) -> Result<Tensor> {
        self.realize()?;
        if self.owns_dense_buffer() {
            return Ok(self.clone());
        }
        self.to_new_buffer()
    }

    /// A realized copy of this tensor in a new dense buffer, always: a
    /// copy kernel, which reads any view (strided, or at any offset) on
    /// every backend, and the buffer is this tensor's alone.
    pub(crate) fn to_new_buffer(&self) -> Result<Tensor> {
        let out = self.copy_contiguous()?;
        out.realize()?;
        Ok(out)
    }

    /// True when both tensors are realized over the same storage.
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        match (self.node.storage(), other.node.storage()) {
            (Some(a), Some(b)) => Arc::ptr_eq(&a, &b),
            _ => false,
        }
    }

    /// Writes `src`'s values into this tensor's storage. `self` must be
    /// realized and own a dense buffer (contiguous, offset 0, as
    /// parameters, optimiser state and uploaded inputs are); `src` has the
    /// same shape, dtype and device and is realized first (lazy work runs
    /// now, in one graph with nothing else).
    ///
    /// On a GPU the values are copied device-to-device into the same
    /// buffer, queued after the kernels that compute `src`, so every view
    /// of `self` sees them and a graph capture records the copy. On the
    /// CPU (no capture there) the tensor's node takes the new values as a
    /// fresh buffer: views realized from it earlier keep the old values.
    pub fn assign(&self, src: &Tensor) -> Result<()> {
        let op = "assign";
        if src.shape() != self.shape() {
            return Err(Error::InvalidArgument {
                op,
                what: "source shape",
                expected: "the destination's shape",
                got: format!("{:?} into {:?}", src.shape(), self.shape()),
            });
        }
        if src.dtype() != self.dtype() {
            return Err(Error::DTypeMismatch {
                op,
                lhs: self.dtype(),
                rhs: src.dtype(),
            });
        }
        Tensor::same_device(op, self, src)?;
        let dst = self.node.storage().ok_or_else(|| Error::InvalidArgument {
            op,
            what: "destination",
            expected: "a realized tensor",
            got: format!("a lazy tensor of shape {:?}", self.shape()),
        })?;
        let layout = self.layout();
        if !self.owns_dense_buffer() {
            return Err(Error::InvalidArgument {
                op,
                what: "destination",
                expected: "a tensor that owns a dense buffer (contiguous, offset 0)",
                got: format!(
                    "a view of shape {:?}, strides {:?}, offset {} into {} elements",
                    self.shape(),
                    layout.strides,
                    layout.offset,
                    dst.len()
                ),
            });
        }
        let mut src = src.contiguous()?;
        src.realize()?;
        // wgpu copies whole 4-byte words: a source that starts inside one
        // (a u8, bool or 16-bit view at an odd offset) gets a buffer of
        // its own first. Rare, so done for every backend alike.
        if (src.layout().offset * src.dtype().size_in_bytes()) % 4 != 0 {
            src = src.to_new_buffer()?;
        }
        let from = src.node.storage().ok_or_else(|| Error::Backend {
            op,
            message: "the source has no storage after realize".into(),
        })?;
        let offset = src.layout().offset;
        let n = self.numel();
        match (&*dst, &*from) {
            (Storage::Cpu(_), Storage::Cpu(s)) => {
                let values = if offset == 0 && s.len() == n {
                    from.clone()
                } else {
                    let idx: Vec<usize> = (offset..offset + n).collect();
                    Arc::new(Storage::Cpu(s.try_gather(op, &idx)?))
                };
                self.node.set_ready(values);
                Ok(())
            }
            (Storage::Device { device: a, .. }, Storage::Device { device: b, .. }) if a == b => {
                if Arc::ptr_eq(&dst, &from) && offset == 0 {
                    return Ok(()); // already this buffer
                }
                crate::backend::get(*a)?.copy(&from, offset, &dst, n)
            }
            (d, s) => Err(Error::DeviceMismatch {
                op,
                lhs: d.device().name(),
                rhs: s.device().name(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Device, Tensor};

    #[test]
    fn assign_replaces_values_and_checks_operands() -> crate::Result<()> {
        let dev = Device::Cpu;
        let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], &dev)?;
        a.realize()?;
        let b = Tensor::from_vec(vec![10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0], [3, 2], &dev)?;
        // A lazy source that reads `a` itself, and an offset view.
        a.assign(&a.mul_scalar(2.0)?)?;
        assert_eq!(a.to_vec::<f32>()?, vec![2.0, 4.0, 6.0, 8.0]);
        a.assign(&b.narrow(0, 1, 2)?)?;
        assert_eq!(a.to_vec::<f32>()?, vec![30.0, 40.0, 50.0, 60.0]);
        assert!(a.assign(&b).is_err(), "shape mismatch");
        assert!(a.assign(&a.cast(DType::F64)?).is_err(), "dtype mismatch");
        assert!(a.t()?.assign(&a).is_err(), "a view is no destination");
        let lazy = a.add_scalar(1.0)?;
        assert!(lazy.assign(&a).is_err(), "a lazy tensor is no destination");
        Ok(())
    }
}
