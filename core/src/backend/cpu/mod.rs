//! The CPU backend: the f64 reference path (the oracle every backend is
//! checked against) and the fast path that runs the kernel IR.

pub mod access;
pub mod compute;
mod conv;
pub mod copy;
pub mod decomp;
pub mod eval;
pub mod exec;
pub mod fastmath;
pub mod map;
pub mod matmul;
pub mod par;
pub mod pool;
pub mod reduce;
mod reduce_columns;
pub mod reference;
pub mod softmax_rows;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod softmax_simd128;
pub mod storage;

pub use storage::CpuStorage;
