//! From a fused graph to a list of kernels with a buffer plan.

pub mod from_graph;
pub mod kernel;
pub mod plan;

pub use from_graph::schedule_graph;
pub use kernel::*;
pub use plan::{BufRef, BufferPlan, OutputRef, Schedule, SlotInfo, Step};
