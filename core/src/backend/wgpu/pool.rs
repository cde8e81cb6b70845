//! Storage-buffer pool. Buffers are handed out by size class (four classes
//! per power of two, so at most ~19% is wasted) and come back when the
//! [`WgpuBuffer`] that owns one is dropped. Reusing a buffer that queued
//! kernels still read is safe: the queue runs submissions in order, so a
//! later kernel's writes land after the earlier reads.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::backend::DeviceBuffer;
use crate::error::{Error, Result};

use super::context::Gpu;

/// Bytes the pool keeps parked at most; beyond that freed buffers are released.
const MAX_PARKED_BYTES: u64 = 2 << 30;

/// Usage of every pooled buffer: bound as storage, filled by uploads, read back by copies.
const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// The size class of a request: at least 256 bytes, rounded up to a quarter octave.
pub(crate) fn size_class(bytes: u64) -> u64 {
    let b = bytes.max(256);
    let top = 63 - b.leading_zeros() as u64; // 2^top <= b
    let step = 1u64 << top.saturating_sub(2);
    b.div_ceil(step) * step
}

#[derive(Default)]
struct Parked {
    by_size: HashMap<u64, Vec<wgpu::Buffer>>,
    bytes: u64,
}

/// Free buffers by size class.
pub(crate) struct Pool {
    parked: Mutex<Parked>,
}

impl Pool {
    pub fn new() -> Arc<Pool> {
        Arc::new(Pool {
            parked: Mutex::new(Parked::default()),
        })
    }

    /// A buffer of at least `bytes` (contents undefined), from the pool or new.
    pub fn take(self: &Arc<Self>, gpu: &Gpu, op: &'static str, bytes: u64) -> Result<WgpuBuffer> {
        crate::backend::fault::check_allocation(crate::Device::Wgpu, op, bytes)?;
        let size = size_class(bytes);
        let largest = gpu
            .limits
            .max_buffer_size
            .min(gpu.limits.max_storage_buffer_binding_size);
        if size > largest && bytes <= largest {
            return self.alloc(gpu, op, bytes, bytes);
        }
        if bytes > largest {
            return Err(Error::OutOfMemory {
                op,
                device: format!("wgpu ({})", gpu.info.name),
                bytes,
                why: format!("larger than the largest buffer a kernel can bind ({largest} bytes)"),
            });
        }
        let reused = {
            let mut p = self.parked.lock().unwrap_or_else(|e| e.into_inner());
            let b = p.by_size.get_mut(&size).and_then(|v| v.pop());
            if b.is_some() {
                p.bytes -= size;
            }
            b
        };
        match reused {
            Some(buffer) => Ok(WgpuBuffer {
                buffer,
                size,
                pool: self.clone(),
            }),
            None => self.alloc(gpu, op, bytes, size),
        }
    }

    fn alloc(
        self: &Arc<Self>,
        gpu: &Gpu,
        op: &'static str,
        bytes: u64,
        size: u64,
    ) -> Result<WgpuBuffer> {
        let make = || {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("fusegraph"),
                size,
                usage: USAGE,
                mapped_at_creation: false,
            })
        };
        let buffer = match gpu.scoped(op, bytes, make) {
            Ok(b) => b,
            Err(Error::OutOfMemory { .. }) => {
                // Parked buffers may be what is in the way: release them and try once more.
                self.clear();
                gpu.scoped(op, bytes, make)?
            }
            Err(e) => return Err(e),
        };
        Ok(WgpuBuffer {
            buffer,
            size,
            pool: self.clone(),
        })
    }

    fn give(&self, size: u64, buffer: wgpu::Buffer) {
        let mut p = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        if p.bytes + size > MAX_PARKED_BYTES {
            return; // dropping releases it
        }
        p.bytes += size;
        p.by_size.entry(size).or_default().push(buffer);
    }

    /// Releases every parked buffer.
    pub fn clear(&self) {
        let mut p = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        p.by_size.clear();
        p.bytes = 0;
    }

    /// Bytes parked now (for tests of reuse).
    pub fn parked_bytes(&self) -> u64 {
        self.parked.lock().map(|p| p.bytes).unwrap_or(0)
    }
}

/// A device buffer owned by a tensor or a schedule slot; dropping it parks
/// the buffer in the pool.
pub struct WgpuBuffer {
    buffer: wgpu::Buffer,
    size: u64,
    pool: Arc<Pool>,
}

impl WgpuBuffer {
    pub(crate) fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Allocated bytes (the size class, at least what was asked).
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for WgpuBuffer {
    fn drop(&mut self) {
        // A handle clone: the pool keeps the GPU memory alive for the next user.
        self.pool.give(self.size, self.buffer.clone());
    }
}

impl std::fmt::Debug for WgpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WgpuBuffer({} bytes)", self.size)
    }
}

impl DeviceBuffer for WgpuBuffer {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_cover_the_request_with_little_waste() {
        for b in [
            1u64,
            255,
            256,
            257,
            1000,
            4096,
            5000,
            1 << 20,
            (1 << 26) + 1,
        ] {
            let c = size_class(b);
            assert!(c >= b && c >= 256, "{b} -> {c}");
            assert!(b < 256 || (c as f64) < b as f64 * 1.26, "{b} -> {c}");
            assert_eq!(c % 4, 0);
        }
    }
}
