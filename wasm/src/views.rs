//! Views: they change only the layout (shape, strides, offset), never copy.

use crate::error::JsResult;
use crate::tensor::{wrap, WasmTensor};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl WasmTensor {
    pub fn reshape(&self, shape: Vec<usize>) -> JsResult<WasmTensor> {
        wrap(self.inner.reshape(shape))
    }

    pub fn flatten(&self) -> JsResult<WasmTensor> {
        wrap(self.inner.flatten())
    }

    pub fn permute(&self, axes: Vec<usize>) -> JsResult<WasmTensor> {
        wrap(self.inner.permute(&axes))
    }

    pub fn transpose(&self, a: i32, b: i32) -> JsResult<WasmTensor> {
        wrap(self.inner.transpose(a as isize, b as isize))
    }

    pub fn t(&self) -> JsResult<WasmTensor> {
        wrap(self.inner.t())
    }

    pub fn narrow(&self, axis: i32, start: usize, len: usize) -> JsResult<WasmTensor> {
        wrap(self.inner.narrow(axis as isize, start, len))
    }

    pub fn expand(&self, shape: Vec<usize>) -> JsResult<WasmTensor> {
        wrap(self.inner.expand(shape))
    }

    #[wasm_bindgen(js_name = broadcastTo)]
    pub fn broadcast_to(&self, shape: Vec<usize>) -> JsResult<WasmTensor> {
        wrap(self.inner.broadcast_to(shape))
    }

    pub fn squeeze(&self, axis: i32) -> JsResult<WasmTensor> {
        wrap(self.inner.squeeze(axis as isize))
    }

    pub fn unsqueeze(&self, axis: i32) -> JsResult<WasmTensor> {
        wrap(self.inner.unsqueeze(axis as isize))
    }

    /// A bounds-checked strided view of the same storage.
    #[wasm_bindgen(js_name = asStrided)]
    pub fn as_strided(
        &self,
        shape: Vec<usize>,
        strides: Vec<i32>,
        offset: usize,
    ) -> JsResult<WasmTensor> {
        let strides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
        wrap(self.inner.as_strided(&shape, &strides, offset))
    }

    /// The same values in a row-major layout (a copy only when needed).
    pub fn contiguous(&self) -> JsResult<WasmTensor> {
        wrap(self.inner.contiguous())
    }
}
