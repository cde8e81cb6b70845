//! `Device::Auto` for the conformance suite: it opens the GPU this build
//! tests (CUDA when the `cuda` feature is on and a GPU opens, else the wgpu
//! adapter) and lowers Auto's threshold so that the suite's small graphs run
//! on the CPU and its larger ones on the GPU, with inputs moving between
//! them. Without any GPU Auto is the CPU, and the suite still runs.

use std::sync::OnceLock;

use fusegraph_core::auto::{self, AutoPolicy};
use fusegraph_core::Device;

/// The threshold the Auto stamp runs with: a 16×16×16 matmul, or an
/// elementwise kernel of a few thousand elements, crosses it.
pub const AUTO_TEST_MIN_GPU_FLOPS: u64 = 8192;

/// `Some(Device::Auto)`, after opening the GPU it may use.
pub fn auto_device() -> Option<Device> {
    static OPENED: OnceLock<()> = OnceLock::new();
    OPENED.get_or_init(|| {
        #[cfg(feature = "cuda")]
        let gpu = crate::cuda_device();
        #[cfg(not(feature = "cuda"))]
        let gpu: Option<Device> = None;
        #[cfg(feature = "wgpu")]
        let gpu = gpu.or_else(crate::wgpu_device);
        auto::set_policy(AutoPolicy {
            min_gpu_flops: AUTO_TEST_MIN_GPU_FLOPS,
            gpu,
        });
        match gpu {
            Some(g) => eprintln!("Device::Auto conformance: CPU and {g}"),
            None => eprintln!("Device::Auto conformance: no GPU, the CPU only"),
        }
    });
    Some(Device::Auto)
}
