//! The WebGPU path (feature `webgpu`): opening the browser's adapter and
//! reading tensors back. Both are asynchronous in the browser — neither the
//! adapter request nor a buffer mapping can be waited for on the page's one
//! thread — so they are exported as functions that return a `Promise`
//! (wasm-bindgen-futures), and nothing here blocks.

use crate::error::{to_js, JsResult, OrThrow};
use crate::io::host_to_js;
use crate::tensor::WasmTensor;
use fusegraph_core::{Device, Error, Tensor};
use wasm_bindgen::prelude::*;

/// Opens the WebGPU adapter and device (once per page) and makes it usable as
/// `useBackend('webgpu')`; resolves to the adapter's description.
#[wasm_bindgen(js_name = openWebGpu)]
pub async fn open_webgpu() -> JsResult<String> {
    let backend = fusegraph_core::backend::wgpu::open().await.or_throw()?;
    Ok(fusegraph_core::backend::Backend::describe(backend.as_ref()))
}

/// Realizes `t` and resolves to its values in a fresh typed array (the
/// dtype's kind), awaiting the GPU copy when the tensor lives on WebGPU. The
/// tensor is shared into the promise first, so the caller may dispose `t`
/// while the read runs.
#[wasm_bindgen(js_name = readAsync)]
pub fn read_async(t: &WasmTensor) -> js_sys::Promise {
    let tensor = t.inner.clone();
    wasm_bindgen_futures::future_to_promise(async move { read(tensor).await })
}

async fn read(t: Tensor) -> JsResult<JsValue> {
    // A contiguous copy only when the layout is not already row-major.
    let dense = t.contiguous().or_throw()?;
    if dense.device() != &Device::Wgpu {
        return crate::io::read_sync(&dense);
    }
    dense.realize().or_throw()?;
    let storage = dense.node().storage().ok_or_else(|| {
        to_js(Error::Backend {
            op: "toArray",
            message: "the realized tensor has no storage".into(),
        })
    })?;
    let host = fusegraph_core::backend::wgpu::download_async(&storage)
        .await
        .or_throw()?;
    let layout = dense.layout();
    host_to_js(&host, layout.offset, layout.numel())
}
