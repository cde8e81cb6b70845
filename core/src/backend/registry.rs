//! The [`Backend`] trait GPU backends implement, and the registry that maps a
//! [`Device`] to its backend. The CPU backend is built in; a GPU backend
//! registers itself when its device is opened (`Device::wgpu()`, or the
//! `fusegraph` crate's `cuda` feature), so the core needs no CUDA code.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use crate::backend::cpu::decomp::Decomposition;
use crate::backend::cpu::CpuStorage;
use crate::backend::storage::Storage;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::passes::Limits;
use crate::schedule::Schedule;

/// What a GPU backend does for the runtime. Kernels arrive as a
/// [`Schedule`]: the backend renders (or looks up) each kernel, allocates the
/// plan's slots, launches, and returns one storage per schedule output.
pub trait Backend: Send + Sync {
    /// The device this backend serves.
    fn device(&self) -> Device;

    /// Adapter/GPU name and version details, for logs and benchmark JSON.
    fn describe(&self) -> String;

    /// The fusion limits of this device (e.g. storage buffers per stage).
    fn limits(&self) -> Limits;

    /// Copies host data into a new device buffer.
    fn upload(&self, data: &CpuStorage) -> Result<Storage>;

    /// Copies a device buffer of this backend back to the host.
    fn download(&self, data: &Storage) -> Result<CpuStorage>;

    /// Runs every step of `schedule`; `leaves` are the bound inputs (on this
    /// device). Returns the storage of each output, in order.
    fn execute(&self, schedule: &Schedule, leaves: &[Arc<Storage>]) -> Result<Vec<Arc<Storage>>>;

    /// Waits until all submitted work has finished.
    fn synchronize(&self) -> Result<()>;

    /// Copies `len` elements of `src`, starting at element `src_offset`,
    /// over the first `len` elements of `dst`, in place and in submission
    /// order (after the kernels queued so far). Both are buffers of this
    /// device and of one dtype, checked by the caller. The CUDA backend
    /// queues a device-to-device copy, which a graph capture records, so
    /// [`crate::Tensor::assign`] keeps a tensor's buffer across replays.
    fn copy(&self, src: &Storage, src_offset: usize, dst: &Storage, len: usize) -> Result<()> {
        let _ = (src, src_offset, len);
        Err(Error::Backend {
            op: "assign",
            message: format!("{} cannot copy into an existing buffer yet", dst.device()),
        })
    }

    /// True when this device stores and computes `dtype` (`Device::Auto`
    /// keeps graphs with other dtypes on the CPU).
    fn supports_dtype(&self, dtype: crate::dtype::DType) -> bool {
        let _ = dtype;
        true
    }

    /// Factorizes `batch` column-major m×n matrices stored back to back in
    /// `input` on the device (cuSOLVER, say). Returns the factors the LAPACK
    /// way, each column-major and batch-contiguous: Cholesky `[L]` (n×n,
    /// upper triangle unspecified); QR `[Q (m×k), R (k×n, below the
    /// diagonal unspecified)]`; SVD `[U (m×k), S (k), V (n×k)]`, k = min(m, n).
    /// `None`: not offered here; the matrices then go through the host.
    fn decompose(
        &self,
        kind: Decomposition,
        input: &Storage,
        batch: usize,
        m: usize,
        n: usize,
    ) -> Option<Result<Vec<Storage>>> {
        let _ = (kind, input, batch, m, n);
        None
    }
}

type Registry = RwLock<HashMap<Device, Arc<dyn Backend>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Makes `backend` the one that serves `backend.device()` (replacing an
/// earlier one: tensors made on the old one keep their buffers alive).
pub fn register(backend: Arc<dyn Backend>) {
    let mut r = registry().write().unwrap_or_else(|p| p.into_inner());
    r.insert(backend.device(), backend);
}

/// The backend of a GPU device, or an error when it was never opened.
pub fn get(device: Device) -> Result<Arc<dyn Backend>> {
    let r = registry().read().unwrap_or_else(|p| p.into_inner());
    r.get(&device)
        .cloned()
        .ok_or_else(|| Error::DeviceUnavailable {
            op: "backend",
            device: device.name(),
            why: match device {
                Device::Cpu => "the CPU has no registered backend object".into(),
                Device::Auto => "Device::Auto picks a backend per graph".into(),
                Device::Wgpu => "open it first with Device::wgpu()".into(),
                Device::Cuda(_) => {
                    "open it first with fusegraph's Device::cuda(n) (feature `cuda`)".into()
                }
            },
        })
}

/// The open GPUs, CUDA devices first (by number), then wgpu.
pub fn open_gpus() -> Vec<Device> {
    let r = registry().read().unwrap_or_else(|p| p.into_inner());
    let mut gpus: Vec<Device> = r.keys().copied().collect();
    gpus.sort_by_key(|d| match d {
        Device::Cuda(n) => (0, *n),
        _ => (1, 0),
    });
    gpus
}

/// True when `device` can run kernels now (the CPU and Auto always can).
pub fn is_open(device: Device) -> bool {
    matches!(device, Device::Cpu | Device::Auto)
        || registry()
            .read()
            .map(|r| r.contains_key(&device))
            .unwrap_or(false)
}
