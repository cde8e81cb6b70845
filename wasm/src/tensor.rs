//! The tensor handle JS holds, its metadata, and creation ops.

use crate::backend;
use crate::dtype;
use crate::error::{JsResult, OrThrow};
use fusegraph_core::{Result, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use wasm_bindgen::prelude::*;

/// A lazy fusegraph tensor. Ops return new handles without computing;
/// reading values (`toF32`, ...) realizes the graph. `free()` releases the
/// handle (the JS wrapper calls it from `dispose()` and a FinalizationRegistry).
#[wasm_bindgen]
pub struct WasmTensor {
    pub(crate) inner: Tensor,
}

/// Handles alive now, so tests can check that `dispose()` and the
/// FinalizationRegistry free them (wasm is single-threaded: relaxed is enough).
static LIVE_HANDLES: AtomicUsize = AtomicUsize::new(0);

impl WasmTensor {
    pub(crate) fn new(inner: Tensor) -> WasmTensor {
        LIVE_HANDLES.fetch_add(1, Ordering::Relaxed);
        WasmTensor { inner }
    }
}

impl Drop for WasmTensor {
    fn drop(&mut self) {
        LIVE_HANDLES.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many tensor handles are alive (not yet freed).
#[wasm_bindgen(js_name = liveHandles)]
pub fn live_handles() -> usize {
    LIVE_HANDLES.load(Ordering::Relaxed)
}

/// Wraps a core result as a handle or a thrown JS error.
pub(crate) fn wrap(r: Result<Tensor>) -> JsResult<WasmTensor> {
    r.map(WasmTensor::new).or_throw()
}

#[wasm_bindgen]
impl WasmTensor {
    pub fn shape(&self) -> Vec<usize> {
        self.inner.shape().to_vec()
    }

    pub fn dtype(&self) -> String {
        self.inner.dtype().name().to_string()
    }

    pub fn numel(&self) -> usize {
        self.inner.numel()
    }

    pub fn device(&self) -> String {
        self.inner.device().name()
    }

    #[wasm_bindgen(js_name = isContiguous)]
    pub fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }

    /// Computes the tensor now (the graph up to it), keeping the result.
    pub fn realize(&self) -> JsResult<()> {
        self.inner.realize().map(|_| ()).or_throw()
    }

    /// Another handle to the same tensor (shares the data, costs an `Arc`).
    #[wasm_bindgen(js_name = cloneHandle)]
    pub fn clone_handle(&self) -> WasmTensor {
        WasmTensor::new(self.inner.clone())
    }

    /// Every element equal to `value`.
    pub fn full(value: f64, shape: Vec<usize>, dtype: &str) -> JsResult<WasmTensor> {
        let dt = dtype::parse("full", dtype).or_throw()?;
        wrap(Tensor::full(value, shape, dt, &backend::current()))
    }

    /// `start, start+step, ...` below `end`.
    pub fn arange(start: f64, end: f64, step: f64, dtype: &str) -> JsResult<WasmTensor> {
        let dt = dtype::parse("arange", dtype).or_throw()?;
        wrap(Tensor::arange(start, end, step, dt, &backend::current()))
    }

    /// Seeded uniform values in [0, 1).
    pub fn rand(shape: Vec<usize>, seed: u32, dtype: &str) -> JsResult<WasmTensor> {
        let dt = dtype::parse("rand", dtype).or_throw()?;
        wrap(Tensor::rand(shape, seed as u64, dt, &backend::current()))
    }

    /// Seeded standard-normal values.
    pub fn randn(shape: Vec<usize>, seed: u32, dtype: &str) -> JsResult<WasmTensor> {
        let dt = dtype::parse("randn", dtype).or_throw()?;
        wrap(Tensor::randn(shape, seed as u64, dt, &backend::current()))
    }
}
