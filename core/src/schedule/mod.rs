//! From a fused graph to a list of kernels with a buffer plan.

pub mod kernel;
pub mod from_graph;
pub mod plan;

pub use kernel::*;
pub use from_graph::schedule_graph;
pub use plan::{BufRef, BufferPlan, OutputRef, Schedule, SlotInfo, Step};
