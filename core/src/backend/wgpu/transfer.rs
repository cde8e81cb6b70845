//! Host ↔ device copies. The device layout of every dtype is its host
//! layout padded to whole `u32` words: bf16 and f16 as little-endian `u16`
//! pairs, u8 and bool (0/1) four to a word, which is exactly what the WGSL
//! renderer's packed loads and stores expect. Read-back goes through a
//! staging buffer and `map_async`; natively the wait is `device.poll`, in the
//! browser the same future is awaited.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use half::{bf16, f16};

use crate::backend::cpu::CpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};

use super::context::Gpu;

/// Device bytes of `len` elements of `dtype` (whole words, at least one).
pub(crate) fn device_bytes(dtype: DType, len: usize) -> u64 {
    ((len * dtype.size_in_bytes()).div_ceil(4).max(1) * 4) as u64
}

/// The host data as device bytes, padded to whole words.
pub(crate) fn to_bytes(data: &CpuStorage) -> Result<Vec<u8>> {
    let mut bytes: Vec<u8> = match data {
        CpuStorage::Bool(v) => v.iter().map(|&b| b as u8).collect(),
        CpuStorage::U8(v) => v.clone(),
        CpuStorage::I32(v) => bytemuck::cast_slice(v).to_vec(),
        CpuStorage::F16(v) => bytemuck::cast_slice(v).to_vec(),
        CpuStorage::BF16(v) => bytemuck::cast_slice(v).to_vec(),
        CpuStorage::F32(v) => bytemuck::cast_slice(v).to_vec(),
        CpuStorage::F64(_) => {
            return Err(Error::UnsupportedDType {
                op: "wgpu upload",
                dtype: DType::F64,
                why: "WebGPU has no 64-bit floats; cast to f32 first or use the CPU/CUDA device",
            })
        }
    };
    bytes.resize(device_bytes(data.dtype(), data.len()) as usize, 0);
    Ok(bytes)
}

/// Host storage of `len` elements of `dtype` from device bytes.
pub(crate) fn from_bytes(dtype: DType, len: usize, bytes: &[u8]) -> Result<CpuStorage> {
    let need = len * dtype.size_in_bytes();
    let b = bytes.get(..need).ok_or_else(|| Error::Backend {
        op: "wgpu download",
        message: format!(
            "read {} bytes, {len} elements of {dtype} need {need}",
            bytes.len()
        ),
    })?;
    fn cast<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
        // The mapped bytes need not be aligned for T: copy element-wise.
        bytemuck::pod_collect_to_vec(b)
    }
    Ok(match dtype {
        DType::Bool => CpuStorage::Bool(b.iter().map(|&x| x != 0).collect()),
        DType::U8 => CpuStorage::U8(b.to_vec()),
        DType::I32 => CpuStorage::I32(cast::<i32>(b)),
        DType::F16 => CpuStorage::F16(cast::<f16>(b)),
        DType::BF16 => CpuStorage::BF16(cast::<bf16>(b)),
        DType::F32 => CpuStorage::F32(cast::<f32>(b)),
        DType::F64 => {
            return Err(Error::UnsupportedDType {
                op: "wgpu download",
                dtype,
                why: "WebGPU has no 64-bit floats",
            })
        }
    })
}

/// A one-shot slot a `map_async` callback fills and a future waits on.
#[derive(Default)]
struct Shared {
    result: Option<std::result::Result<(), wgpu::BufferAsyncError>>,
    waker: Option<Waker>,
}

struct MapFuture(Arc<Mutex<Shared>>);

impl Future for MapFuture {
    type Output = std::result::Result<(), wgpu::BufferAsyncError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match s.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Copies the first `bytes` bytes of `src` into a staging buffer and maps it.
/// Returns the future of the mapping and the staging buffer.
fn start_read(gpu: &Gpu, src: &wgpu::Buffer, bytes: u64) -> Result<(MapFuture, wgpu::Buffer)> {
    let staging = gpu.scoped("wgpu download", bytes, || {
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("fusegraph staging"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("fusegraph read"),
            });
        enc.copy_buffer_to_buffer(src, 0, &staging, 0, bytes);
        gpu.queue.submit([enc.finish()]);
        staging
    })?;
    let shared = Arc::new(Mutex::new(Shared::default()));
    let cb = shared.clone();
    staging.map_async(wgpu::MapMode::Read, .., move |r| {
        let mut s = cb.lock().unwrap_or_else(|e| e.into_inner());
        s.result = Some(r);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    });
    Ok((MapFuture(shared), staging))
}

fn finish_read(
    gpu: &Gpu,
    staging: &wgpu::Buffer,
    mapped: std::result::Result<(), wgpu::BufferAsyncError>,
) -> Result<Vec<u8>> {
    gpu.check("wgpu download")?;
    mapped.map_err(|e| Error::Backend {
        op: "wgpu download",
        message: format!("mapping the staging buffer failed: {e}"),
    })?;
    let out = staging
        .slice(..)
        .get_mapped_range()
        .map_err(|e| Error::Backend {
            op: "wgpu download",
            message: format!("reading the mapped staging buffer: {e}"),
        })?
        .to_vec();
    staging.unmap();
    Ok(out)
}

/// Reads `bytes` bytes of `src` back (awaitable everywhere; what the browser uses).
pub(crate) async fn read_async(gpu: &Gpu, src: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
    let (fut, staging) = start_read(gpu, src, bytes)?;
    let mapped = fut.await;
    finish_read(gpu, &staging, mapped)
}

/// Reads `bytes` bytes of `src` back, blocking until the GPU is done (native).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn read_blocking(gpu: &Gpu, src: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
    let (fut, staging) = start_read(gpu, src, bytes)?;
    // The poll runs the map callback, so the future is ready afterwards.
    gpu.wait("wgpu download")?;
    let mapped = pollster::block_on(fut);
    finish_read(gpu, &staging, mapped)
}
