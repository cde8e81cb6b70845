//! fusegraph: fused tensor compute. This crate re-exports [`fusegraph_core`]
//! (the `Tensor` API, the runtime and the CPU backend) and ships the
//! `fusegraph` command line.

pub use fusegraph_core::*;

mod auto_device;
pub use auto_device::auto_device;

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
pub use cuda::CudaDevice;

/// The README's Rust examples, compiled and run as doc tests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
