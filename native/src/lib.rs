pub use fusegraph_core::*;
