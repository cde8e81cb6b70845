//! The CUDA device for the conformance suite: opened once per test binary.
//! Without a driver or GPU the suite is skipped, unless
//! `FUSEGRAPH_REQUIRE_CUDA=1` (set by scripts/gpu-test.sh on the GPU
//! machine), which makes a missing GPU a failure instead of a skip.

use std::sync::OnceLock;

use fusegraph::CudaDevice;
use fusegraph_core::Device;

/// `Some(Device::Cuda(0))` once GPU 0 is open; `None` when there is none.
///
/// # Panics
/// When the GPU does not open and `FUSEGRAPH_REQUIRE_CUDA=1`.
pub fn cuda_device() -> Option<Device> {
    static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();
    let opened = DEVICE.get_or_init(|| Device::cuda(0).map_err(|e| e.to_string()));
    match opened {
        Ok(d) => Some(*d),
        Err(e) if std::env::var("FUSEGRAPH_REQUIRE_CUDA").is_ok_and(|v| v == "1") => {
            panic!("FUSEGRAPH_REQUIRE_CUDA=1 but the CUDA device did not open: {e}")
        }
        Err(_) => None,
    }
}
