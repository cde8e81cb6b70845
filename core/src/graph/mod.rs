//! The lazy op graph: nodes shared by tensors, and the mutable graph the
//! passes rewrite.

pub mod build;
pub mod graph;
pub mod node;
pub mod op;
pub mod print;

pub use graph::{GNode, GOp, Graph, LeafInfo};
pub use node::{Node, State};
pub use op::{BinaryOp, Op, ReduceOp, UnaryOp, ViewOp};
