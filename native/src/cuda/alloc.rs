//! The stream-ordered caching allocator. Every kernel and copy of a device
//! runs on one stream, so a buffer freed on the host may be handed to the
//! next allocation at once: any later use is queued behind the work that
//! still reads it. Sizes are rounded to classes (powers of two up to 1 MiB,
//! then multiples of 2 MiB) and freed buffers wait in per-class lists.
//!
//! While a CUDA graph is being captured, freed buffers go to the capture's
//! own list instead: the graph replays into them later, so nothing outside
//! the graph may take them until the graph is dropped.

use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{result, sys};
use fusegraph_core::backend::DeviceBuffer;
use fusegraph_core::{Error, Result};

use super::copy_stream::Lane;
use super::error;

/// Rounds a request up to its size class (at least 256 bytes, so every
/// buffer is aligned for vector loads and cuBLASLt).
pub(crate) fn size_class(bytes: usize) -> usize {
    const MIB: usize = 1 << 20;
    let b = bytes.max(256);
    if b <= MIB {
        b.next_power_of_two()
    } else {
        b.div_ceil(2 * MIB) * 2 * MIB
    }
}

#[derive(Default)]
struct Lists {
    free: HashMap<usize, Vec<sys::CUdeviceptr>>,
    /// `Some` while a graph is captured: buffers freed meanwhile.
    capture: Option<Vec<(sys::CUdeviceptr, usize)>>,
    /// Bytes held by the pool (live and free).
    reserved: usize,
    /// Bytes in free lists.
    cached: usize,
}

/// One device's pool of buffers.
pub(crate) struct Pool {
    lists: Mutex<Lists>,
    device: String,
}

// SAFETY: device pointers are plain integers; all access goes through the mutex.
unsafe impl Send for Pool {}
unsafe impl Sync for Pool {}

impl Pool {
    pub(crate) fn new(device: String) -> Arc<Pool> {
        Arc::new(Pool {
            lists: Mutex::new(Lists::default()),
            device,
        })
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, Lists> {
        self.lists.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer of at least `bytes` (the context must be current).
    /// `sync` waits for the device before cached memory is given back to
    /// the driver when a fresh allocation does not fit.
    pub(crate) fn alloc(
        self: &Arc<Self>,
        bytes: usize,
        sync: &dyn Fn() -> Result<()>,
    ) -> Result<CudaBuffer> {
        let class = size_class(bytes);
        {
            let mut l = self.lists();
            let reused = match &mut l.capture {
                Some(held) => held
                    .iter()
                    .position(|&(_, c)| c == class)
                    .map(|i| held.swap_remove(i).0),
                None => None,
            };
            let reused = reused.or_else(|| {
                let p = l.free.get_mut(&class).and_then(|v| v.pop());
                if p.is_some() {
                    l.cached -= class;
                }
                p
            });
            if let Some(ptr) = reused {
                return Ok(self.wrap(ptr, class));
            }
        }
        let ptr = self.malloc(class, sync)?;
        Ok(self.wrap(ptr, class))
    }

    /// A new driver allocation of `class` bytes, never a reused one: for
    /// buffers another stream writes first (the copy streams), which must
    /// not be handed memory that kernels queued on the main stream still
    /// read. Counted in the pool's total; freed buffers come back here.
    pub(crate) fn malloc(
        &self,
        class: usize,
        sync: &dyn Fn() -> Result<()>,
    ) -> Result<sys::CUdeviceptr> {
        // SAFETY: a plain allocation on the current context.
        match unsafe { result::malloc_sync(class) } {
            Ok(ptr) => {
                self.lists().reserved += class;
                Ok(ptr)
            }
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                // Give the cached buffers back and try once more.
                sync()?;
                self.release_cached();
                // SAFETY: as above.
                match unsafe { result::malloc_sync(class) } {
                    Ok(ptr) => {
                        self.lists().reserved += class;
                        Ok(ptr)
                    }
                    Err(e) => Err(Error::OutOfMemory {
                        op: "cuda alloc",
                        device: self.device.clone(),
                        bytes: class as u64,
                        why: format!("{e:?}; {} bytes held by fusegraph", self.lists().reserved),
                    }),
                }
            }
            Err(e) => Err(error::driver("cuda alloc", &self.device, e)),
        }
    }

    /// True while a CUDA graph is being captured.
    pub(crate) fn is_capturing(&self) -> bool {
        self.lists().capture.is_some()
    }

    fn wrap(self: &Arc<Self>, ptr: sys::CUdeviceptr, class: usize) -> CudaBuffer {
        CudaBuffer {
            ptr,
            bytes: class,
            pool: self.clone(),
            lane: None,
        }
    }

    pub(crate) fn give(&self, ptr: sys::CUdeviceptr, class: usize) {
        let mut l = self.lists();
        if let Some(held) = &mut l.capture {
            held.push((ptr, class));
            return;
        }
        l.free.entry(class).or_default().push(ptr);
        l.cached += class;
    }

    /// Frees every cached buffer (the device must be idle).
    pub(crate) fn release_cached(&self) {
        let mut l = self.lists();
        let free = std::mem::take(&mut l.free);
        for (class, ptrs) in free {
            for p in ptrs {
                // SAFETY: the pointer came from malloc_sync and no one holds it.
                if unsafe { result::free_sync(p) }.is_ok() {
                    l.reserved -= class;
                }
            }
        }
        l.cached = 0;
    }

    /// (bytes held in total, bytes cached for reuse).
    pub(crate) fn stats(&self) -> (usize, usize) {
        let l = self.lists();
        (l.reserved, l.cached)
    }

    /// Starts keeping freed buffers for a graph capture.
    pub(crate) fn begin_capture(&self) {
        self.lists().capture = Some(Vec::new());
    }

    /// Ends a capture; the returned buffers belong to the captured graph.
    pub(crate) fn end_capture(self: &Arc<Self>) -> Vec<CudaBuffer> {
        let held = self.lists().capture.take().unwrap_or_default();
        held.into_iter().map(|(p, c)| self.wrap(p, c)).collect()
    }
}

/// A device allocation; dropping it returns it to its pool, or to the copy
/// stream lane it came from.
pub struct CudaBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    pool: Arc<Pool>,
    lane: Option<Arc<Lane>>,
}

impl CudaBuffer {
    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// A buffer of a copy stream's lane (see `copy_stream`).
    pub(crate) fn of_lane(
        ptr: sys::CUdeviceptr,
        class: usize,
        pool: Arc<Pool>,
        lane: Arc<Lane>,
    ) -> CudaBuffer {
        CudaBuffer {
            ptr,
            bytes: class,
            pool,
            lane: Some(lane),
        }
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        match self.lane.take() {
            Some(lane) => lane.give(self.ptr, self.bytes),
            None => self.pool.give(self.ptr, self.bytes),
        }
    }
}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaBuffer({:#x}, {} bytes)", self.ptr, self.bytes)
    }
}

impl DeviceBuffer for CudaBuffer {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
