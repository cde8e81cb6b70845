//! Backends: where a schedule's kernels run. The CPU backend is built in;
//! GPU backends implement [`Backend`] and register themselves.

pub mod cpu;
pub mod fault;
mod registry;
mod storage;
#[cfg(feature = "wgpu")]
pub mod wgpu;

pub use registry::{get, is_open, open_gpus, register, Backend};
pub use storage::{DeviceBuffer, Storage};
