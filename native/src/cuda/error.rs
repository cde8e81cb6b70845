//! Turning CUDA library status codes into fusegraph errors: out-of-memory
//! and a lost device get their own variants (the caller can free memory or
//! fall back to the CPU); everything else names the op that failed.

use cudarc::cublaslt::result::CublasError;
use cudarc::driver::{result::DriverError, sys::CUresult as Cu};
use cudarc::nvrtc::result::NvrtcError;
use fusegraph_core::Error;

/// A driver error from `op` on `device`.
pub(crate) fn driver(op: &'static str, device: &str, e: DriverError) -> Error {
    let why = format!("{e:?}");
    match e.0 {
        Cu::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory {
            op,
            device: device.to_string(),
            bytes: 0,
            why,
        },
        Cu::CUDA_ERROR_ILLEGAL_ADDRESS
        | Cu::CUDA_ERROR_LAUNCH_FAILED
        | Cu::CUDA_ERROR_ECC_UNCORRECTABLE
        | Cu::CUDA_ERROR_HARDWARE_STACK_ERROR
        | Cu::CUDA_ERROR_ILLEGAL_INSTRUCTION
        | Cu::CUDA_ERROR_MISALIGNED_ADDRESS
        | Cu::CUDA_ERROR_INVALID_PC
        | Cu::CUDA_ERROR_CONTEXT_IS_DESTROYED => Error::DeviceLost {
            op,
            device: device.to_string(),
            why,
        },
        _ => Error::Backend {
            op,
            message: format!("{device}: {why}"),
        },
    }
}

/// A cuBLASLt error from `op`, with the problem it was given.
pub(crate) fn cublas(op: &'static str, what: &str, e: CublasError) -> Error {
    Error::Backend {
        op,
        message: format!("cuBLASLt {e:?} for {what}"),
    }
}

/// An NVRTC error from `op`, with the compiler's log when there is one.
pub(crate) fn nvrtc(op: &'static str, kernel: &str, e: NvrtcError, log: &str) -> Error {
    Error::Backend {
        op,
        message: format!("NVRTC {e:?} compiling {kernel}: {log}"),
    }
}
