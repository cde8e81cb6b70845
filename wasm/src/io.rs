//! Typed arrays in and out. In: wasm-bindgen copies the JS array once into
//! a `Vec` in wasm memory, which becomes the tensor's storage as is (no
//! second copy). Out: the realized storage is copied once, straight into a
//! new JS typed array (borrowed in place when contiguous).
//! f16 and bf16 travel as their raw bits in a `Uint16Array`; bool as `Uint8Array` 0/1.

use crate::backend;
use crate::error::{coded_error, invalid, JsResult, OrThrow};
use crate::tensor::{wrap, WasmTensor};
#[cfg(feature = "webgpu")]
use fusegraph_core::backend::cpu::CpuStorage;
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

#[wasm_bindgen]
impl WasmTensor {
    /// Copies the values into `out` (`toArraySync(into)`): the dtype's
    /// typed array (`Uint8Array` for bool, `Uint16Array` for f16/bf16
    /// bits) of exactly `numel` elements. The JS side checks both first;
    /// these checks keep a wrong array an error rather than a trap.
    #[wasm_bindgen(js_name = readInto)]
    pub fn read_into(&self, out: &JsValue) -> JsResult<()> {
        let t = &self.inner;
        // One arm per dtype: the JS class, the storage's element type, and
        // how a slice of it becomes the class's elements.
        macro_rules! copy_into {
            ($class:ty, $elem:ty, $as_js:expr) => {{
                let a = as_class::<$class>(t, out)?;
                check_len(t, a.length())?;
                t.with_slice(|s: &[$elem]| a.copy_from($as_js(s)))
                    .or_throw()
            }};
        }
        match t.dtype() {
            DType::F32 => copy_into!(Float32Array, f32, std::convert::identity),
            DType::F64 => copy_into!(Float64Array, f64, std::convert::identity),
            DType::I32 => copy_into!(Int32Array, i32, std::convert::identity),
            DType::U8 => copy_into!(Uint8Array, u8, std::convert::identity),
            DType::F16 => copy_into!(Uint16Array, f16, bytemuck::cast_slice),
            DType::BF16 => copy_into!(Uint16Array, bf16, bytemuck::cast_slice),
            DType::Bool => {
                let a = as_class::<Uint8Array>(t, out)?;
                check_len(t, a.length())?;
                t.with_slice(|b: &[bool]| {
                    let bytes: Vec<u8> = b.iter().map(|&x| x as u8).collect();
                    a.copy_from(&bytes)
                })
                .or_throw()
            }
        }
    }
}

/// `out` as the typed array class `A` that `t`'s dtype reads into.
fn as_class<A: JsCast + Clone>(t: &Tensor, out: &JsValue) -> JsResult<A> {
    let want = match t.dtype() {
        DType::F32 => "Float32Array",
        DType::F64 => "Float64Array",
        DType::I32 => "Int32Array",
        DType::U8 | DType::Bool => "Uint8Array",
        DType::F16 | DType::BF16 => "Uint16Array",
    };
    out.dyn_ref::<A>().cloned().ok_or_else(|| {
        coded_error(
            "FG_BAD_DTYPE",
            &format!("toArray: into must be a {want} for a {} tensor", t.dtype()),
        )
    })
}

/// `copy_from` panics when the lengths differ, so they are checked first.
fn check_len(t: &Tensor, len: u32) -> JsResult<()> {
    if len as usize == t.numel() {
        return Ok(());
    }
    Err(coded_error(
        "FG_BAD_SIZE",
        &format!(
            "toArray: into has {len} elements, the tensor of shape {:?} has {}",
            t.shape(),
            t.numel()
        ),
    ))
}

/// The values of a host tensor as its dtype's typed array (realizing it).
/// (The WebGPU build's async read uses it for tensors that are not on the GPU.)
#[cfg(feature = "webgpu")]
pub(crate) fn read_sync(t: &Tensor) -> JsResult<JsValue> {
    let h = WasmTensor::new(t.clone());
    Ok(match t.dtype() {
        DType::F32 => h.to_f32()?.into(),
        DType::F64 => h.to_f64()?.into(),
        DType::I32 => h.to_i32()?.into(),
        DType::U8 | DType::Bool => h.to_u8()?.into(),
        DType::F16 | DType::BF16 => h.to_u16()?.into(),
    })
}

/// `len` elements of `host` from `offset` as the dtype's typed array (one copy).
#[cfg(feature = "webgpu")]
pub(crate) fn host_to_js(host: &CpuStorage, offset: usize, len: usize) -> JsResult<JsValue> {
    fn part<T>(v: &[T], offset: usize, len: usize) -> JsResult<&[T]> {
        v.get(offset..offset + len).ok_or_else(|| {
            crate::error::to_js(fusegraph_core::Error::Backend {
                op: "toArray",
                message: format!(
                    "read {} elements, the view needs {offset}..{}",
                    v.len(),
                    offset + len
                ),
            })
        })
    }
    Ok(match host {
        CpuStorage::F32(v) => Float32Array::from(part(v, offset, len)?).into(),
        CpuStorage::F64(v) => Float64Array::from(part(v, offset, len)?).into(),
        CpuStorage::I32(v) => Int32Array::from(part(v, offset, len)?).into(),
        CpuStorage::U8(v) => Uint8Array::from(part(v, offset, len)?).into(),
        CpuStorage::Bool(v) => {
            let bytes: Vec<u8> = part(v, offset, len)?.iter().map(|&b| b as u8).collect();
            Uint8Array::from(bytes.as_slice()).into()
        }
        CpuStorage::F16(v) => {
            Uint16Array::from(bytemuck::cast_slice::<f16, u16>(part(v, offset, len)?)).into()
        }
        CpuStorage::BF16(v) => {
            Uint16Array::from(bytemuck::cast_slice::<bf16, u16>(part(v, offset, len)?)).into()
        }
    })
}
