//! The lazy op graph: nodes shared by tensors, and the mutable graph the
//! passes rewrite.

pub mod op;
