//! fusegraph-core: dtypes, strided layouts, the lazy op graph, fusion passes,
//! the kernel IR, WGSL and CUDA C renderers, and the CPU backend.

pub mod dtype;
pub mod error;
pub mod graph;
pub mod layout;
pub mod rng;
pub mod schedule;
pub mod shape;

pub use dtype::{DType, Element, Scalar};
pub use error::{Error, Result};
pub use layout::Layout;
pub use shape::Shape;
