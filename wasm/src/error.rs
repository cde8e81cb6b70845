//! Core errors as JS `Error`s: `name` is `FusegraphError`, `code` a stable
//! machine-readable string, `message` the core's text (which names the op
//! and the shapes or dtypes involved).

use fusegraph_core::Error;
use wasm_bindgen::prelude::*;

/// What every fallible export returns; the `Err` value is thrown in JS.
pub type JsResult<T> = Result<T, JsValue>;

/// The stable code JS sees for each core error. Every variant is listed;
/// the last arm gives `FG_ERROR` to variants added to the core later, until
/// they are given a code here.
#[allow(unreachable_patterns)]
pub fn error_code(e: &Error) -> &'static str {
    match e {
        Error::Broadcast { .. }
        | Error::MatmulShape { .. }
        | Error::ConcatShape { .. }
        | Error::GatherShape { .. }
        | Error::Expand { .. }
        | Error::RankTooLow { .. } => "FG_SHAPE_MISMATCH",
        Error::ElementCount { .. } | Error::Reshape { .. } => "FG_BAD_SIZE",
        Error::AxisOutOfRange { .. }
        | Error::BadPermutation { .. }
        | Error::DuplicateAxis { .. }
        | Error::SqueezeNotOne { .. } => "FG_BAD_AXIS",
        Error::NarrowOutOfRange { .. }
        | Error::ViewOutOfBounds { .. }
        | Error::IndexOutOfRange { .. }
        | Error::StrideRank { .. } => "FG_OUT_OF_RANGE",
        Error::UnsupportedDType { .. }
        | Error::DTypeMismatch { .. }
        | Error::ElementType { .. }
        | Error::IndexDType { .. } => "FG_BAD_DTYPE",
        Error::NotScalar { .. } => "FG_NOT_SCALAR",
        Error::NoInputs { .. } | Error::InvalidArgument { .. } => "FG_INVALID_ARGUMENT",
        Error::DeviceMismatch { .. } => "FG_DEVICE_MISMATCH",
        Error::DeviceUnavailable { .. } => "FG_DEVICE_UNAVAILABLE",
        Error::OutOfMemory { .. } | Error::TooLarge { .. } => "FG_OUT_OF_MEMORY",
        Error::DeviceLost { .. } => "FG_DEVICE_LOST",
        Error::Backend { .. } => "FG_BACKEND",
        Error::NotPositiveDefinite { .. } => "FG_NOT_POSITIVE_DEFINITE",
        Error::NoConvergence { .. } => "FG_NO_CONVERGENCE",
        Error::ImageDecode { .. } => "FG_IMAGE_DECODE",
        Error::ImageTooLarge { .. } => "FG_IMAGE_TOO_LARGE",
        Error::ImageEncode { .. } => "FG_IMAGE_ENCODE",
        _ => "FG_ERROR",
    }
}

/// A JS `Error` for `e`, with its `code`.
pub fn to_js(e: Error) -> JsValue {
    coded_error(error_code(&e), &e.to_string())
}

/// A JS `Error` named `FusegraphError` with `code` and `message`.
pub fn coded_error(code: &str, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    err.set_name("FusegraphError");
    // Setting a property on a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(&err, &JsValue::from_str("code"), &JsValue::from_str(code));
    err.into()
}

/// `?`-friendly conversion of core results.
pub trait OrThrow<T> {
    fn or_throw(self) -> JsResult<T>;
}

impl<T> OrThrow<T> for fusegraph_core::Result<T> {
    fn or_throw(self) -> JsResult<T> {
        self.map_err(to_js)
    }
}

/// An `InvalidArgument` error for a bad value passed from JS.
pub fn invalid(op: &'static str, what: &'static str, expected: &'static str, got: &str) -> Error {
    Error::InvalidArgument {
        op,
        what,
        expected,
        got: got.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusegraph_core::{DType, Device, Tensor};

    #[test]
    fn shape_errors_map_to_shape_mismatch() {
        let a = Tensor::zeros([3, 4], DType::F32, &Device::Cpu).unwrap();
        let b = Tensor::zeros([5], DType::F32, &Device::Cpu).unwrap();
        assert_eq!(error_code(&a.add(&b).unwrap_err()), "FG_SHAPE_MISMATCH");
        assert_eq!(error_code(&a.matmul(&a).unwrap_err()), "FG_SHAPE_MISMATCH");
    }

    #[test]
    fn axis_and_size_errors_have_their_own_codes() {
        let a = Tensor::zeros([3, 4], DType::F32, &Device::Cpu).unwrap();
        assert_eq!(error_code(&a.softmax(5).unwrap_err()), "FG_BAD_AXIS");
        assert_eq!(error_code(&a.reshape([5]).unwrap_err()), "FG_BAD_SIZE");
        assert_eq!(
            error_code(&a.narrow(0, 2, 5).unwrap_err()),
            "FG_OUT_OF_RANGE"
        );
    }
}
