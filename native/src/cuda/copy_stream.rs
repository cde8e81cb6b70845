//! Copy streams: host↔device copies that overlap the kernels of the main
//! stream, from and into [`PinnedBuffer`]s.
//!
//! ```no_run
//! use fusegraph::{CudaDevice, DType, Device, Tensor};
//! use fusegraph::cuda::{CopyStream, PinnedBuffer};
//! let dev = Device::cuda(0)?;
//! let w = Tensor::randn([1024, 1024], 1, DType::F32, &dev)?;
//! let (up, down) = (CopyStream::new(&dev)?, CopyStream::new(&dev)?);
//! let mut inputs: Vec<PinnedBuffer<f32>> =
//!     (0..4).map(|_| PinnedBuffer::new(&dev, 1024 * 1024)).collect::<Result<_, _>>()?;
//! let mut outputs: Vec<PinnedBuffer<f32>> =
//!     (0..4).map(|_| PinnedBuffer::new(&dev, 1024 * 1024)).collect::<Result<_, _>>()?;
//! for (x_host, y_host) in inputs.iter_mut().zip(&mut outputs) {
//!     let x = up.upload(x_host, [1024, 1024])?; // returns at once
//!     let y = x.matmul(&w)?.relu()?;             // waits for the copy on the GPU, not the host
//!     down.download(&y, y_host)?;                // queued after y's kernel
//! }
//! let first: &[f32] = outputs[0].as_slice()?;    // waits for that download only
//! # Ok::<(), fusegraph::Error>(())
//! ```
//!
//! Ordering, all on the GPU (the host does not wait):
//! - an upload's copy is followed by an event the main stream waits for
//!   at once, so every kernel queued later sees the data, and kernels
//!   queued earlier run while it copies;
//! - a download waits for an event recorded on the main stream after the
//!   tensor's kernels, and keeps the tensor's buffer alive until it is done;
//! - a pinned buffer waits for its previous copy before the next one, on
//!   whichever stream that was.
//!
//! Memory: the main stream's caching allocator may hand a freed buffer out
//! again at once, because later kernels on that stream queue behind the
//! ones still reading it. A copy stream is not behind them, so uploads get
//! buffers from the copy stream's own lane instead: a buffer freed back to
//! the lane carries an event of the main stream's position at that moment
//! (PyTorch's `record_stream`, done for every buffer), and an upload takes
//! only a buffer whose event has completed, or a fresh one (waiting for
//! the event only when the device is out of memory).

use std::sync::{Arc, Mutex};

use cudarc::driver::{result, sys, CudaContext, CudaStream};
use fusegraph_core::backend::{Backend, Storage};
use fusegraph_core::dtype::Element;
use fusegraph_core::{Device, Error, Result, Shape, Tensor};

use super::alloc::{size_class, CudaBuffer, Pool};
use super::backend::CudaBackend;
use super::error;
use super::pinned::PinnedBuffer;

const WAIT: sys::CUevent_wait_flags = sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT;

/// Buffers freed by tensors that came from a copy stream's uploads.
pub(crate) struct Lane {
    ctx: Arc<CudaContext>,
    /// The device's main stream (kept alive for the events recorded on it).
    main: Arc<CudaStream>,
    pool: Arc<Pool>,
    lists: Mutex<LaneLists>,
}

#[derive(Default)]
struct LaneLists {
    /// (pointer, size class, event of the main stream when it was freed).
    free: Vec<(sys::CUdeviceptr, usize, sys::CUevent)>,
    /// Events to record again.
    spare: Vec<sys::CUevent>,
}

// SAFETY: pointers and events are driver handles usable from any thread;
// the lists are behind a mutex.
unsafe impl Send for Lane {}
unsafe impl Sync for Lane {}

impl Lane {
    fn lists(&self) -> std::sync::MutexGuard<'_, LaneLists> {
        self.lists.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer freed by its tensor (on any thread).
    pub(crate) fn give(&self, ptr: sys::CUdeviceptr, class: usize) {
        // Freed while a graph is captured: it belongs to the graph now,
        // like every other buffer freed then.
        if self.pool.is_capturing() || self.ctx.bind_to_thread().is_err() {
            self.pool.give(ptr, class);
            return;
        }
        let spare = self.lists().spare.pop();
        let event = match spare {
            Some(e) => Ok(e),
            None => result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING),
        };
        // SAFETY: a live event and the live main stream.
        let recorded = event
            .and_then(|e| unsafe { result::event::record(e, self.main.cu_stream()) }.map(|()| e));
        match recorded {
            Ok(e) => self.lists().free.push((ptr, class, e)),
            // No event: the main stream's pool orders it correctly for the
            // main stream; uploads will allocate afresh.
            Err(_) => self.pool.give(ptr, class),
        }
    }

    /// A buffer of at least `bytes` that the copy stream `copy` may write.
    /// A freed buffer whose readers on the main stream are done is reused
    /// at once; when every freed one is still being read, a fresh one is
    /// allocated rather than making the copy wait for those kernels (which
    /// would put the upload of chunk i+1 behind the compute of chunk i).
    /// Only when the device is out of memory does the copy wait for a
    /// buffer's readers instead.
    fn take(
        self: &Arc<Self>,
        be: &CudaBackend,
        bytes: usize,
        copy: sys::CUstream,
    ) -> Result<CudaBuffer> {
        fusegraph_core::backend::fault::check_allocation(
            be.device(),
            "cuda copy stream alloc",
            bytes as u64,
        )?;
        let class = size_class(bytes);
        let ready = {
            let mut l = self.lists();
            // SAFETY: live events; a query does not change them.
            let i = l
                .free
                .iter()
                .position(|&(_, c, e)| c == class && unsafe { result::event::query(e) }.is_ok());
            i.map(|i| l.free.swap_remove(i))
        };
        if let Some((ptr, class, event)) = ready {
            self.lists().spare.push(event);
            return Ok(CudaBuffer::of_lane(
                ptr,
                class,
                self.pool.clone(),
                self.clone(),
            ));
        }
        let fresh = self.pool.malloc(class, &|| be.sync_stream());
        let busy = match fresh {
            Ok(ptr) => {
                return Ok(CudaBuffer::of_lane(
                    ptr,
                    class,
                    self.pool.clone(),
                    self.clone(),
                ))
            }
            Err(e @ Error::OutOfMemory { .. }) => {
                let mut l = self.lists();
                match l.free.iter().position(|&(_, c, _)| c == class) {
                    Some(i) => l.free.swap_remove(i),
                    None => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let (ptr, class, event) = busy;
        // SAFETY: live stream and event; the wait is queued before the
        // event is recorded again.
        let waited = unsafe { result::stream::wait_event(copy, event, WAIT) };
        self.lists().spare.push(event);
        let buf = CudaBuffer::of_lane(ptr, class, self.pool.clone(), self.clone());
        waited.map_err(|e| error::driver("cuda copy stream", &be.name, e))?;
        Ok(buf)
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let lists = std::mem::take(self.lists.get_mut().unwrap_or_else(|p| p.into_inner()));
        // Each event marks a main-stream position after the buffer's last
        // use, so the main stream's pool may reuse the buffer from here on.
        for (ptr, class, event) in lists.free {
            self.pool.give(ptr, class);
            // SAFETY: destroyed once; the driver releases it when it completes.
            unsafe {
                let _ = result::event::destroy(event);
            }
        }
        for event in lists.spare {
            // SAFETY: as above.
            unsafe {
                let _ = result::event::destroy(event);
            }
        }
    }
}

/// A stream for host↔device copies beside the device's main stream.
/// Use one for uploads and one for downloads so both directions overlap
/// each other as well as the kernels.
pub struct CopyStream {
    backend: Arc<CudaBackend>,
    stream: Arc<CudaStream>,
    lane: Arc<Lane>,
    /// Recorded on the main stream before a download.
    main_ready: sys::CUevent,
}

// SAFETY: driver handles, used under the backend's execution lock.
unsafe impl Send for CopyStream {}
unsafe impl Sync for CopyStream {}

impl CopyStream {
    /// A new copy stream on CUDA device `device` (opened with `Device::cuda`).
    pub fn new(device: &Device) -> Result<CopyStream> {
        let be = super::backend_of(device)?;
        be.bind()?;
        let stream = be
            .ctx
            .new_stream()
            .map_err(|e| error::driver("CopyStream::new", &be.name, e))?;
        let main_ready = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| error::driver("CopyStream::new", &be.name, e))?;
        let lane = Arc::new(Lane {
            ctx: be.ctx.clone(),
            main: be.stream.clone(),
            pool: be.pool.clone(),
            lists: Mutex::new(LaneLists::default()),
        });
        Ok(CopyStream {
            backend: be,
            stream,
            lane,
            main_ready,
        })
    }

    fn check_host<T: Element>(
        &self,
        op: &'static str,
        host: &PinnedBuffer<T>,
        numel: usize,
        shape: &[usize],
    ) -> Result<()> {
        let dev = self.backend.device();
        if host.device != dev {
            return Err(Error::DeviceMismatch {
                op,
                lhs: dev.name(),
                rhs: format!("pinned memory of {}", host.device),
            });
        }
        if host.len() != numel {
            return Err(Error::ElementCount {
                op,
                shape: shape.to_vec(),
                expected: numel,
                got: host.len(),
            });
        }
        if self
            .backend
            .capturing
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Err(Error::Backend {
                op,
                message: "cannot copy between host and device while a CUDA graph is being captured"
                    .into(),
            });
        }
        Ok(())
    }

    /// Queues a copy of `host` to the device and returns the tensor of
    /// `shape` it fills, at once. Kernels that use the tensor wait for the
    /// copy on the GPU; `host` may be written again after its next access
    /// (which waits for this copy).
    pub fn upload<T: Element>(
        &self,
        host: &mut PinnedBuffer<T>,
        shape: impl Into<Shape>,
    ) -> Result<Tensor> {
        let shape: Shape = shape.into();
        let dims = shape.dims().to_vec();
        let numel = shape.checked_numel("CopyStream::upload", std::mem::size_of::<T>())?;
        self.check_host("CopyStream::upload", host, numel, &dims)?;
        let be = &self.backend;
        let storage = {
            let _g = be.enter();
            be.bind()?;
            let copy = self.stream.cu_stream();
            let buf = self.lane.take(be, numel * std::mem::size_of::<T>(), copy)?;
            let (event, pending) = host.last_copy();
            let bytes = host.bytes_for_copy();
            let queue = || -> std::result::Result<(), result::DriverError> {
                // SAFETY: live streams and event; the buffer holds at least
                // the host's bytes; the host memory stays pinned and
                // untouched until `event` completes (its accessors wait).
                unsafe {
                    if pending {
                        // An earlier copy on another stream may still write it.
                        result::stream::wait_event(copy, event, WAIT)?;
                    }
                    if !bytes.is_empty() {
                        result::memcpy_htod_async(buf.ptr(), &*bytes, copy)?;
                    }
                    result::event::record(event, copy)?;
                    result::stream::wait_event(be.cu_stream(), event, WAIT)
                }
            };
            queue().map_err(|e| error::driver("CopyStream::upload", &be.name, e))?;
            host.mark_in_flight(None);
            Storage::Device {
                device: be.device(),
                dtype: T::DTYPE,
                len: numel,
                buffer: Box::new(buf),
            }
        };
        Tensor::from_backend_storage(storage, &dims, be.device())
    }

    /// Realizes `tensor` (queued on the main stream as usual) and queues a
    /// copy of its elements into `host`, returning at once; `host`'s next
    /// access waits for the copy. The tensor's dtype must be `T` and its
    /// element count `host.len()`; a non-contiguous view is made
    /// contiguous on the device first.
    pub fn download<T: Element>(&self, tensor: &Tensor, host: &mut PinnedBuffer<T>) -> Result<()> {
        let be = &self.backend;
        let op = "CopyStream::download";
        if *tensor.device() != be.device() {
            return Err(Error::DeviceMismatch {
                op,
                lhs: be.device().name(),
                rhs: tensor.device().name(),
            });
        }
        if tensor.dtype() != T::DTYPE {
            return Err(Error::ElementType {
                op,
                requested: T::DTYPE,
                actual: tensor.dtype(),
            });
        }
        self.check_host(op, host, tensor.numel(), tensor.shape())?;
        let dense = tensor.contiguous()?;
        dense.realize()?;
        let storage = dense.node().storage().ok_or(Error::Backend {
            op,
            message: "the realized tensor has no storage".into(),
        })?;
        let offset_bytes = dense.layout().offset * std::mem::size_of::<T>();
        let _g = be.enter();
        be.bind()?;
        let ptr = be.ptr_of(&storage)? + offset_bytes as u64;
        let copy = self.stream.cu_stream();
        let (event, pending) = host.last_copy();
        let bytes = host.bytes_for_copy();
        let mut queue = || -> std::result::Result<(), result::DriverError> {
            // SAFETY: live streams and events; `ptr` points at the tensor's
            // elements in `storage`, which the host buffer keeps alive until
            // the copy is done; the host memory is untouched until `event`
            // completes.
            unsafe {
                result::event::record(self.main_ready, be.cu_stream())?;
                result::stream::wait_event(copy, self.main_ready, WAIT)?;
                if pending {
                    result::stream::wait_event(copy, event, WAIT)?;
                }
                if !bytes.is_empty() {
                    result::memcpy_dtoh_async(bytes, ptr, copy)?;
                }
                result::event::record(event, copy)
            }
        };
        queue().map_err(|e| error::driver(op, &be.name, e))?;
        host.mark_in_flight(Some(storage));
        Ok(())
    }

    /// Waits for every copy queued on this stream.
    pub fn synchronize(&self) -> Result<()> {
        self.backend.bind()?;
        // SAFETY: our live stream.
        unsafe { result::stream::synchronize(self.stream.cu_stream()) }
            .map_err(|e| error::driver("CopyStream::synchronize", &self.backend.name, e))
    }
}

impl Drop for CopyStream {
    fn drop(&mut self) {
        // Copies still queued read or write pinned memory and lane buffers.
        let _ = self.synchronize();
        // SAFETY: created in `new`, destroyed once.
        unsafe {
            let _ = result::event::destroy(self.main_ready);
        }
    }
}
