//! Which device new tensors are created on. The JS `init()` decides (WebGPU
//! when an adapter exists and this build has the backend, else the SIMD128
//! CPU path) and calls [`use_backend`]; ops keep their inputs' device.
//!
//! WebGPU: builds with feature `webgpu` list it in [`compiled_backends`];
//! JS first awaits `openWebGpu()` (src/webgpu.rs), then `use_backend("webgpu")`.

use std::cell::Cell;

use crate::error::{invalid, to_js, JsResult};
use fusegraph_core::{Device, Error};
use wasm_bindgen::prelude::*;

thread_local! {
    static CURRENT: Cell<Device> = const { Cell::new(Device::Cpu) };
}

/// The device new tensors go to.
pub fn current() -> Device {
    CURRENT.with(|c| c.get())
}

/// The backends this build can run: `cpu`, plus `webgpu` once built in.
#[wasm_bindgen(js_name = compiledBackends)]
pub fn compiled_backends() -> Vec<String> {
    let mut names = vec!["cpu".to_string()];
    if cfg!(feature = "webgpu") {
        names.push("webgpu".to_string());
    }
    names
}

/// Whether this build has the image codecs and ops (feature `image`).
#[wasm_bindgen(js_name = hasImage)]
pub fn has_image() -> bool {
    cfg!(feature = "image")
}

/// Makes `name` (`cpu` or `webgpu`) the device of new tensors.
#[wasm_bindgen(js_name = useBackend)]
pub fn use_backend(name: &str) -> JsResult<()> {
    let device = match name {
        "cpu" => Device::Cpu,
        "webgpu" if Device::Wgpu.is_open() => Device::Wgpu,
        "webgpu" => return Err(to_js(webgpu_unavailable())),
        other => {
            return Err(to_js(invalid(
                "init",
                "backend",
                "cpu, webgpu or auto",
                other,
            )))
        }
    };
    CURRENT.with(|c| c.set(device));
    Ok(())
}

fn webgpu_unavailable() -> Error {
    let why = if cfg!(feature = "webgpu") {
        "the WebGPU device has not been opened (await openWebGpu() first)"
    } else {
        "this build of fusegraph has no WebGPU backend (the CPU-only .wasm was loaded); use backend 'cpu' or 'auto', or load the WebGPU build"
    };
    Error::DeviceUnavailable {
        op: "init",
        device: "webgpu".into(),
        why: why.into(),
    }
}
