//! Typed arrays in and out. In: wasm-bindgen copies the JS array once into
//! a `Vec` in wasm memory, which becomes the tensor's storage as is (no
//! second copy). Out: the realized storage is copied once, straight into a
//! new JS typed array (borrowed in place when contiguous).
//! f16 and bf16 travel as their raw bits in a `Uint16Array`; bool as `Uint8Array` 0/1.

use crate::backend;
use crate::error::{invalid, JsResult, OrThrow};
use crate::tensor::{wrap, WasmTensor};
use fusegraph_core::{DType, Element, Tensor};
use half::{bf16, f16};
use js_sys::{Float32Array, Float64Array, Int32Array, Uint16Array, Uint8Array};
use wasm_bindgen::prelude::*;

fn from_vec<T: Element>(data: Vec<T>, shape: Vec<usize>) -> JsResult<WasmTensor> {
    wrap(Tensor::from_vec(data, shape, &backend::current()))
}

#[wasm_bindgen]
impl WasmTensor {
    #[wasm_bindgen(js_name = fromF32)]
    pub fn from_f32(data: Vec<f32>, shape: Vec<usize>) -> JsResult<WasmTensor> {
        from_vec(data, shape)
    }

    #[wasm_bindgen(js_name = fromF64)]
    pub fn from_f64(data: Vec<f64>, shape: Vec<usize>) -> JsResult<WasmTensor> {
        from_vec(data, shape)
    }

    #[wasm_bindgen(js_name = fromI32)]
    pub fn from_i32(data: Vec<i32>, shape: Vec<usize>) -> JsResult<WasmTensor> {
        from_vec(data, shape)
    }

    /// `u8` data, or `bool` (nonzero is true) when `asBool`.
    #[wasm_bindgen(js_name = fromU8)]
    pub fn from_u8(data: Vec<u8>, shape: Vec<usize>, as_bool: bool) -> JsResult<WasmTensor> {
        if as_bool {
            return from_vec(data.iter().map(|&b| b != 0).collect::<Vec<bool>>(), shape);
        }
        from_vec(data, shape)
    }

    /// f16 or bf16 bits (`dtype` says which); the vector is reused as is.
    #[wasm_bindgen(js_name = fromU16)]
    pub fn from_u16(data: Vec<u16>, shape: Vec<usize>, dtype: &str) -> JsResult<WasmTensor> {
        match dtype {
            "f16" => from_vec(bytemuck::allocation::cast_vec::<u16, f16>(data), shape),
            "bf16" => from_vec(bytemuck::allocation::cast_vec::<u16, bf16>(data), shape),
            other => Err(invalid(
                "tensor",
                "dtype of a Uint16Array",
                "f16 or bf16",
                other,
            ))
            .or_throw(),
        }
    }

    #[wasm_bindgen(js_name = toF32)]
    pub fn to_f32(&self) -> JsResult<Float32Array> {
        self.inner
            .with_slice(|s: &[f32]| Float32Array::from(s))
            .or_throw()
    }

    #[wasm_bindgen(js_name = toF64)]
    pub fn to_f64(&self) -> JsResult<Float64Array> {
        self.inner
            .with_slice(|s: &[f64]| Float64Array::from(s))
            .or_throw()
    }

    #[wasm_bindgen(js_name = toI32)]
    pub fn to_i32(&self) -> JsResult<Int32Array> {
        self.inner
            .with_slice(|s: &[i32]| Int32Array::from(s))
            .or_throw()
    }

    /// `u8` values, or bool as 0/1.
    #[wasm_bindgen(js_name = toU8)]
    pub fn to_u8(&self) -> JsResult<Uint8Array> {
        if self.inner.dtype() == DType::Bool {
            let bytes = self
                .inner
                .with_slice(|b: &[bool]| b.iter().map(|&x| x as u8).collect::<Vec<u8>>())
                .or_throw()?;
            return Ok(Uint8Array::from(bytes.as_slice()));
        }
        self.inner
            .with_slice(|s: &[u8]| Uint8Array::from(s))
            .or_throw()
    }

    /// f16 or bf16 bits.
    #[wasm_bindgen(js_name = toU16)]
    pub fn to_u16(&self) -> JsResult<Uint16Array> {
        let bits = |s: &[u16]| Uint16Array::from(s);
        if self.inner.dtype() == DType::BF16 {
            return self
                .inner
                .with_slice(|s: &[bf16]| bits(bytemuck::cast_slice(s)))
                .or_throw();
        }
        self.inner
            .with_slice(|s: &[f16]| bits(bytemuck::cast_slice(s)))
            .or_throw()
    }
}
