//! Realized data as a graph node holds it: a host buffer, or a buffer that
//! belongs to a GPU backend. The core never looks inside a device buffer; it
//! hands it back to the backend that made it (to run kernels, or to copy it
//! to the host).

use std::any::Any;
use std::fmt;

use crate::backend::cpu::CpuStorage;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// A buffer owned by a GPU backend. Backends downcast it to their own type
/// through [`DeviceBuffer::as_any`]; dropping it returns the memory to the
/// backend's pool.
pub trait DeviceBuffer: Any + Send + Sync + fmt::Debug {
    fn as_any(&self) -> &dyn Any;
}

/// The data behind a realized node.
#[derive(Debug)]
pub enum Storage {
    Cpu(CpuStorage),
    Device {
        device: Device,
        dtype: DType,
        /// Elements (not bytes).
        len: usize,
        buffer: Box<dyn DeviceBuffer>,
    },
}

impl Storage {
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => s.dtype(),
            Storage::Device { dtype, .. } => *dtype,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
            Storage::Device { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Refuses a copy of `len` elements of `self`, from element
    /// `src_offset`, over the first `len` elements of `dst` that would
    /// reach past either buffer or change the dtype: the check every
    /// backend's [`crate::backend::Backend::copy`] makes before it queues
    /// the copy.
    pub fn check_copy_into(
        &self,
        op: &'static str,
        src_offset: usize,
        dst: &Storage,
        len: usize,
    ) -> Result<()> {
        let fits = src_offset
            .checked_add(len)
            .is_some_and(|end| end <= self.len());
        if fits && len <= dst.len() && self.dtype() == dst.dtype() {
            return Ok(());
        }
        Err(Error::Backend {
            op,
            message: format!(
                "{len} elements from offset {src_offset} of a {} buffer of {} into a {} buffer of {}",
                self.dtype(),
                self.len(),
                dst.dtype(),
                dst.len()
            ),
        })
    }

    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Device { device, .. } => *device,
        }
    }

    /// The host buffer, when this storage is one.
    pub fn as_cpu(&self) -> Option<&CpuStorage> {
        match self {
            Storage::Cpu(s) => Some(s),
            Storage::Device { .. } => None,
        }
    }

    /// The host buffer or an error naming `op` (for backends that need host data).
    pub fn cpu_or_err(&self, op: &'static str) -> Result<&CpuStorage> {
        self.as_cpu().ok_or_else(|| Error::Backend {
            op,
            message: format!("expected host data, found a buffer on {}", self.device()),
        })
    }

    /// A host copy of the data (a clone for host storage, a read-back for a
    /// device buffer, which waits for the kernels that write it).
    pub fn to_cpu(&self) -> Result<CpuStorage> {
        match self {
            Storage::Cpu(s) => Ok(s.clone()),
            Storage::Device { device, .. } => crate::backend::get(*device)?.download(self),
        }
    }
}
