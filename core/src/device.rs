//! Where a tensor's data lives and its kernels run.

use std::fmt;

/// A compute device. Tensors carry one; ops between tensors on different
/// devices are an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Device {
    /// The host CPU: fused loops over chunks, rayon across cores on native,
    /// one SIMD128 thread in wasm.
    #[default]
    Cpu,
}

impl Device {
    pub fn name(&self) -> String {
        match self {
            Device::Cpu => "cpu".to_string(),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
