//! fusegraph-core: dtypes, strided layouts, the lazy op graph, fusion passes,
//! the kernel IR, WGSL and CUDA C renderers, and the CPU backend.

pub mod auto;
pub mod autograd;
pub mod backend;
pub mod codegen;
pub mod device;
pub mod dtype;
pub mod error;
pub mod graph;
#[cfg(feature = "image")]
pub mod image;
pub mod layout;
pub mod nn;
pub mod optim;
pub mod passes;
pub mod profile;
pub mod rng;
pub mod runtime;
pub mod schedule;
pub mod shape;
pub mod tensor;

pub use device::Device;
pub use dtype::{DType, Element, Scalar};
pub use error::{Error, Result};
pub use layout::Layout;
pub use passes::Limits;
pub use runtime::synchronize;
pub use shape::Shape;
pub use tensor::Tensor;
