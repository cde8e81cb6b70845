//! From a fused graph to a list of kernels with a buffer plan.

pub mod kernel;
pub mod plan;

pub use kernel::*;
pub use plan::{BufferPlan, Schedule, Step};
