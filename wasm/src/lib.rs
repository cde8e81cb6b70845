//! wasm-bindgen bindings of fusegraph: a thin first cut of the JS API
//! (f32 tensors, the core ops, results back as typed arrays). Errors become
//! JS `Error`s whose message starts with a stable code; nothing panics
//! across the boundary because every fallible call returns `Result`.

use fusegraph_core::{DType, Device, Error, Tensor};
use wasm_bindgen::prelude::*;

/// A stable, machine-readable name for each error kind (the `code` JS sees).
pub fn error_code(e: &Error) -> &'static str {
    match e {
        Error::Broadcast { .. }
        | Error::MatmulShape { .. }
        | Error::ConcatShape { .. }
        | Error::GatherShape { .. }
        | Error::Expand { .. } => "SHAPE_MISMATCH",
        Error::ElementCount { .. } | Error::Reshape { .. } => "BAD_SIZE",
        Error::AxisOutOfRange { .. }
        | Error::BadPermutation { .. }
        | Error::DuplicateAxis { .. }
        | Error::SqueezeNotOne { .. } => "BAD_AXIS",
        Error::NarrowOutOfRange { .. }
        | Error::ViewOutOfBounds { .. }
        | Error::IndexOutOfRange { .. }
        | Error::StrideRank { .. } => "OUT_OF_RANGE",
        Error::UnsupportedDType { .. }
        | Error::DTypeMismatch { .. }
        | Error::ElementType { .. }
        | Error::IndexDType { .. } => "BAD_DTYPE",
        Error::TooLarge { .. } => "TOO_LARGE",
        _ => "FAILED",
    }
}

fn js_err(e: Error) -> JsError {
    JsError::new(&format!("{}: {e}", error_code(&e)))
}

/// An f32 tensor computed by fusegraph's CPU path (WebGPU comes later).
#[wasm_bindgen]
pub struct WasmTensor {
    inner: Tensor,
}

#[wasm_bindgen]
impl WasmTensor {
    /// A tensor from row-major `data` with `shape`.
    #[wasm_bindgen(constructor)]
    pub fn new(data: Vec<f32>, shape: Vec<usize>) -> Result<WasmTensor, JsError> {
        Tensor::from_vec(data, shape, &Device::Cpu)
            .map(|inner| WasmTensor { inner })
            .map_err(js_err)
    }

    /// Seeded standard-normal values.
    pub fn randn(shape: Vec<usize>, seed: u32) -> Result<WasmTensor, JsError> {
        Tensor::randn(shape, seed as u64, DType::F32, &Device::Cpu)
            .map(|inner| WasmTensor { inner })
            .map_err(js_err)
    }

    pub fn shape(&self) -> Vec<usize> {
        self.inner.shape().to_vec()
    }

    pub fn add(&self, other: &WasmTensor) -> Result<WasmTensor, JsError> {
        wrap(self.inner.add(&other.inner))
    }

    pub fn mul(&self, other: &WasmTensor) -> Result<WasmTensor, JsError> {
        wrap(self.inner.mul(&other.inner))
    }

    pub fn relu(&self) -> Result<WasmTensor, JsError> {
        wrap(self.inner.relu())
    }

    pub fn matmul(&self, other: &WasmTensor) -> Result<WasmTensor, JsError> {
        wrap(self.inner.matmul(&other.inner))
    }

    pub fn softmax(&self, axis: i32) -> Result<WasmTensor, JsError> {
        wrap(self.inner.softmax(axis as isize))
    }

    /// Computes the tensor and returns its values (a `Float32Array` in JS).
    #[wasm_bindgen(js_name = toFloat32Array)]
    pub fn to_float32_array(&self) -> Result<Vec<f32>, JsError> {
        self.inner.to_vec::<f32>().map_err(js_err)
    }
}

fn wrap(r: fusegraph_core::Result<Tensor>) -> Result<WasmTensor, JsError> {
    r.map(|inner| WasmTensor { inner }).map_err(js_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_stable() {
        let a = Tensor::zeros([3, 4], DType::F32, &Device::Cpu).unwrap();
        let b = Tensor::zeros([5], DType::F32, &Device::Cpu).unwrap();
        let e = a.add(&b).unwrap_err();
        assert_eq!(error_code(&e), "SHAPE_MISMATCH");
    }
}
