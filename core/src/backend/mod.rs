//! Backends: where a schedule's kernels run.

pub mod cpu;
