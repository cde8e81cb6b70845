//! Where a tensor's data lives and its kernels run.

use std::fmt;

/// A compute device. Tensors carry one; ops between tensors on different
/// devices are an error (move one with [`Tensor::to_device`](crate::Tensor::to_device)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Device {
    /// The host CPU: fused loops over chunks, rayon across cores on native,
    /// one SIMD128 thread in wasm.
    #[default]
    Cpu,
    /// The WebGPU adapter opened with `Device::wgpu()` (Vulkan, Metal, DX12
    /// natively; the browser's WebGPU in wasm).
    Wgpu,
    /// The n-th CUDA GPU, opened through the `fusegraph` crate's `cuda` feature.
    Cuda(usize),
    /// The CPU or an open GPU, chosen per realized graph by the size of its
    /// work (see [`crate::auto`]); falls back to the CPU when the GPU fails.
    Auto,
}

impl Device {
    pub fn name(&self) -> String {
        match self {
            Device::Cpu => "cpu".to_string(),
            Device::Wgpu => "wgpu".to_string(),
            Device::Cuda(n) => format!("cuda:{n}"),
            Device::Auto => "auto".to_string(),
        }
    }

    /// True for the host CPU.
    pub fn is_cpu(&self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// True when kernels can run here now: the CPU always, a GPU once opened.
    pub fn is_open(&self) -> bool {
        crate::backend::is_open(*self)
    }
}

#[cfg(feature = "wgpu")]
impl Device {
    /// Opens the WebGPU adapter (once per process) and returns
    /// [`Device::Wgpu`]. The same code runs natively and in the browser.
    pub async fn wgpu() -> crate::Result<Device> {
        crate::backend::wgpu::open().await.map(|_| Device::Wgpu)
    }

    /// [`Device::wgpu`], blocking until the adapter answers (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wgpu_blocking() -> crate::Result<Device> {
        crate::backend::wgpu::open_blocking().map(|_| Device::Wgpu)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
