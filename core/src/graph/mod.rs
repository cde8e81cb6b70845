//! The lazy op graph: nodes shared by tensors, and the mutable graph the
//! passes rewrite.

pub mod build;
pub mod dag;
pub mod node;
pub mod op;
pub mod print;

pub use dag::{GNode, GOp, Graph, LeafInfo};
pub use node::{Node, State};
pub use op::{BinaryOp, Op, ReduceOp, UnaryOp, ViewOp};
