//! wasm-bindgen bindings of fusegraph, the engine under the `fusegraph` npm
//! package. The JS wrapper in `wasm/npm/src` is the public API; these exports
//! are its low-level half:
//!
//! - [`WasmTensor`]: a lazy tensor with the core's ops and views,
//! - typed arrays in and out (`io`), dtype names (`dtype`),
//! - backend selection (`backend`: the SIMD128 CPU path, and WebGPU in
//!   builds with feature `webgpu`, whose adapter request and read-back are
//!   async: `webgpu`),
//! - image decode/encode and image ops in builds with feature `image`
//!   (`image`),
//! - errors as JS `Error`s with a stable `code` (`error`), and a panic hook
//!   that records any residual panic so the wrapper can report it (`panic`).

mod backend;
mod dtype;
mod error;
#[cfg(feature = "image")]
mod image;
mod io;
mod ops;
mod panic;
mod tensor;
mod views;
#[cfg(feature = "webgpu")]
mod webgpu;

pub use error::error_code;
pub use tensor::WasmTensor;
