//! The image half of the bindings: decode/encode, the image ops on `u8`
//! `[H, W, C]` tensors, and the one-call `transform` an edge worker runs.
//! `wasm/npm/src/image.js` wraps these as `fg.image.*` and checks the
//! options first; every argument is checked again here by the core.

use crate::backend;
use crate::error::{invalid, JsResult, OrThrow};
use crate::tensor::{wrap, WasmTensor};
use fusegraph_core::image::{
    self, resample::fit_size, Adjust, DecodeLimits, Filter, FlipAxis, Format, TransformOptions,
};
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

fn set(o: &Object, k: &str, v: JsValue) {
    // Setting a property on a fresh plain object cannot fail.
    let _ = Reflect::set(o, &JsValue::from_str(k), &v);
}

fn limits(max_pixels: f64, max_side: f64) -> JsResult<DecodeLimits> {
    let ok = |v: f64| v.is_finite() && v >= 1.0 && v.fract() == 0.0;
    if !ok(max_pixels) || !ok(max_side) || max_side > u32::MAX as f64 {
        return Err(invalid(
            "image.decode",
            "maxPixels/maxSide",
            "positive integers",
            &format!("maxPixels={max_pixels} maxSide={max_side}"),
        ))
        .or_throw();
    }
    Ok(DecodeLimits {
        max_pixels: max_pixels as u64,
        max_side: max_side as u32,
    })
}

fn format(s: &str) -> JsResult<Format> {
    Format::parse(s)
        .ok_or_else(|| invalid("image.encode", "format", "'jpeg', 'png' or 'webp'", s))
        .or_throw()
}

fn filter(s: &str) -> JsResult<Filter> {
    Filter::parse(s)
        .ok_or_else(|| {
            invalid(
                "image.resize",
                "filter",
                "'lanczos3', 'bilinear' or 'nearest'",
                s,
            )
        })
        .or_throw()
}

fn quality(q: f64) -> JsResult<u8> {
    if q.is_finite() && q.fract() == 0.0 && (1.0..=100.0).contains(&q) {
        Ok(q as u8)
    } else {
        Err(invalid(
            "image.encode",
            "quality",
            "an integer in 1..=100",
            &q.to_string(),
        ))
        .or_throw()
    }
}

/// `{width, height, format}` from the header, no pixels decoded.
#[wasm_bindgen(js_name = imageProbe)]
pub fn image_probe(bytes: &[u8]) -> JsResult<JsValue> {
    let info = image::probe(bytes).or_throw()?;
    let o = Object::new();
    set(&o, "width", info.width.into());
    set(&o, "height", info.height.into());
    set(&o, "format", info.format.name().into());
    Ok(o.into())
}

#[wasm_bindgen(js_name = imageDecode)]
pub fn image_decode(bytes: &[u8], max_pixels: f64, max_side: f64) -> JsResult<WasmTensor> {
    let l = limits(max_pixels, max_side)?;
    wrap(image::decode(bytes, &l, &backend::current()))
}

#[wasm_bindgen(js_name = imageEncode)]
pub fn image_encode(img: &WasmTensor, fmt: &str, q: f64) -> JsResult<Uint8Array> {
    let bytes = image::encode(&img.inner, format(fmt)?, quality(q)?).or_throw()?;
    Ok(Uint8Array::from(bytes.as_slice()))
}

/// Resize; a `height` or `width` of 0 follows the other keeping the aspect.
#[wasm_bindgen(js_name = imageResize)]
pub fn image_resize(img: &WasmTensor, width: u32, height: u32, f: &str) -> JsResult<WasmTensor> {
    let (h, w, _) = image::dims_u8("image.resize", &img.inner).or_throw()?;
    let some = |v: u32| (v > 0).then_some(v as usize);
    if width == 0 && height == 0 {
        return Err(invalid(
            "image.resize",
            "width/height",
            "at least one of them",
            "neither",
        ))
        .or_throw();
    }
    let (ow, oh) = fit_size(h, w, some(width), some(height));
    wrap(image::resize(&img.inner, ow, oh, filter(f)?))
}

#[wasm_bindgen(js_name = imageBlur)]
pub fn image_blur(img: &WasmTensor, sigma: f64) -> JsResult<WasmTensor> {
    wrap(image::blur(&img.inner, sigma))
}

#[wasm_bindgen(js_name = imageSharpen)]
pub fn image_sharpen(img: &WasmTensor, amount: f64, sigma: f64) -> JsResult<WasmTensor> {
    wrap(image::sharpen(&img.inner, amount, sigma))
}

#[wasm_bindgen(js_name = imageCrop)]
pub fn image_crop(img: &WasmTensor, x: u32, y: u32, w: u32, h: u32) -> JsResult<WasmTensor> {
    wrap(image::crop(
        &img.inner, x as usize, y as usize, w as usize, h as usize,
    ))
}

#[wasm_bindgen(js_name = imageFlip)]
pub fn image_flip(img: &WasmTensor, axis: &str) -> JsResult<WasmTensor> {
    let a = FlipAxis::parse(axis)
        .ok_or_else(|| invalid("image.flip", "axis", "'h' or 'v'", axis))
        .or_throw()?;
    wrap(image::flip(&img.inner, a))
}

#[wasm_bindgen(js_name = imageRotate90)]
pub fn image_rotate90(img: &WasmTensor, k: i32) -> JsResult<WasmTensor> {
    wrap(image::rotate90(&img.inner, k as i64))
}

#[wasm_bindgen(js_name = imageAdjust)]
pub fn image_adjust(
    img: &WasmTensor,
    brightness: f64,
    contrast: f64,
    saturation: f64,
    gamma: f64,
) -> JsResult<WasmTensor> {
    let a = Adjust {
        brightness,
        contrast,
        saturation,
        gamma,
    };
    wrap(image::adjust(&img.inner, &a))
}

#[wasm_bindgen(js_name = imageGrayscale)]
pub fn image_grayscale(img: &WasmTensor) -> JsResult<WasmTensor> {
    wrap(image::grayscale(&img.inner))
}

#[wasm_bindgen(js_name = imageColourMatrix)]
pub fn image_colour_matrix(
    img: &WasmTensor,
    matrix: Vec<f64>,
    offset: Vec<f64>,
) -> JsResult<WasmTensor> {
    wrap(image::colour_matrix(&img.inner, &matrix, &offset))
}

/// `performance.now()` where the host has it (browsers, Node, Deno,
/// workerd), else `Date.now()`.
fn now_ms() -> f64 {
    let perf = Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok();
    if let Some(p) = perf.filter(|p| p.is_object()) {
        if let Ok(f) = Reflect::get(&p, &JsValue::from_str("now")) {
            if let Some(f) = f.dyn_ref::<js_sys::Function>() {
                if let Some(v) = f.call0(&p).ok().and_then(|v| v.as_f64()) {
                    return v;
                }
            }
        }
    }
    js_sys::Date::now()
}

/// decode → resize → blur → sharpen → encode in one call. `width`/`height`
/// 0 = not given; `fmt` "" = the input's format.
#[wasm_bindgen(js_name = imageTransform)]
#[allow(clippy::too_many_arguments)]
pub fn image_transform(
    bytes: &[u8],
    width: u32,
    height: u32,
    f: &str,
    fmt: &str,
    q: f64,
    blur: f64,
    sharpen: f64,
    sharpen_sigma: f64,
    max_pixels: f64,
    max_side: f64,
) -> JsResult<JsValue> {
    let o = TransformOptions {
        width: (width > 0).then_some(width as usize),
        height: (height > 0).then_some(height as usize),
        filter: filter(f)?,
        format: if fmt.is_empty() {
            None
        } else {
            Some(format(fmt)?)
        },
        quality: quality(q)?,
        blur,
        sharpen,
        sharpen_sigma,
        limits: limits(max_pixels, max_side)?,
        shrink_on_load: true,
    };
    let r = image::transform(bytes, &o, &now_ms).or_throw()?;
    let out = Object::new();
    set(&out, "bytes", Uint8Array::from(r.bytes.as_slice()).into());
    set(&out, "width", (r.width as u32).into());
    set(&out, "height", (r.height as u32).into());
    set(&out, "format", r.format.name().into());
    let t = Object::new();
    set(&t, "decode", r.timings.decode.into());
    set(&t, "process", r.timings.process.into());
    set(&t, "encode", r.timings.encode.into());
    set(&out, "timings", t.into());
    Ok(out.into())
}
