//! Page-locked ("pinned") host memory: the only kind of host memory the GPU
//! copies straight out of and into while the CPU goes on. A pageable
//! `Vec` goes through a driver staging buffer instead, and the call does
//! not return until that staging is done, so nothing overlaps.
//!
//! A [`PinnedBuffer`] remembers the last copy that uses it (an event on a
//! [`super::CopyStream`]); every access from the host waits for that copy
//! first, so the host never reads half-written data or overwrites data a
//! copy is still reading.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{result, sys, CudaContext};
use fusegraph_core::backend::Storage;
use fusegraph_core::dtype::Element;
use fusegraph_core::{Device, Error, Result};

use super::error;

/// The copy in flight on a pinned buffer, if any.
struct InFlight {
    /// Recorded on the copy stream after each copy that uses the buffer.
    event: sys::CUevent,
    pending: bool,
    /// The device buffer a download reads, kept alive until it is done.
    keep: Option<Arc<Storage>>,
}

/// `len` elements of `T` in page-locked host memory of one CUDA device's
/// context, for [`super::CopyStream`] uploads and downloads that overlap
/// compute.
///
/// ```no_run
/// use fusegraph::{CudaDevice, Device};
/// use fusegraph::cuda::PinnedBuffer;
/// let dev = Device::cuda(0)?;
/// let mut host = PinnedBuffer::<f32>::new(&dev, 1 << 20)?; // zeroed
/// host.as_mut_slice()?.fill(1.0);
/// # Ok::<(), fusegraph::Error>(())
/// ```
pub struct PinnedBuffer<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    ctx: Arc<CudaContext>,
    pub(crate) device: Device,
    flight: Mutex<InFlight>,
}

// SAFETY: the buffer owns its memory; every host access goes through
// `&self`/`&mut self` after waiting for the copies that use it, and the
// driver handles (context, event) may be used from any thread.
unsafe impl<T: Element> Send for PinnedBuffer<T> {}
unsafe impl<T: Element> Sync for PinnedBuffer<T> {}

impl<T: Element> PinnedBuffer<T> {
    /// `len` zeroed elements pinned for CUDA device `device`.
    pub fn new(device: &Device, len: usize) -> Result<PinnedBuffer<T>> {
        let be = super::backend_of(device)?;
        be.bind()?;
        let bytes =
            len.checked_mul(std::mem::size_of::<T>())
                .ok_or_else(|| Error::InvalidArgument {
                    op: "PinnedBuffer::new",
                    what: "len",
                    expected: "a size that fits in memory",
                    got: format!("{len} elements of {}", T::DTYPE),
                })?;
        let ptr = if bytes == 0 {
            NonNull::dangling()
        } else {
            // SAFETY: a plain allocation on the bound context; the memory is
            // zeroed below before anything reads it.
            let raw =
                unsafe { result::malloc_host(bytes, 0) }.map_err(|e| {
                    match error::driver("PinnedBuffer::new", &be.name, e) {
                        Error::OutOfMemory {
                            op, device, why, ..
                        } => Error::OutOfMemory {
                            op,
                            device: format!("{device} (pinned host memory)"),
                            bytes: bytes as u64,
                            why,
                        },
                        other => other,
                    }
                })?;
            // SAFETY: `raw` points at `bytes` writable bytes; all-zero bytes
            // are a valid value of every element type (0, 0.0, false).
            unsafe { std::ptr::write_bytes(raw.cast::<u8>(), 0, bytes) };
            NonNull::new(raw.cast::<T>()).ok_or_else(|| Error::Backend {
                op: "PinnedBuffer::new",
                message: "cuMemHostAlloc returned a null pointer".into(),
            })?
        };
        let event = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| error::driver("PinnedBuffer::new", &be.name, e))?;
        Ok(PinnedBuffer {
            ptr,
            len,
            ctx: be.ctx.clone(),
            device: *device,
            flight: Mutex::new(InFlight {
                event,
                pending: false,
                keep: None,
            }),
        })
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The CUDA device whose copies may use it.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Waits for the copy that uses the buffer, if one is in flight.
    pub fn wait(&self) -> Result<()> {
        let mut f = self.lock_flight();
        self.settle(&mut f)
    }

    /// The elements, after the copy in flight (a download into it) is done.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.wait()?;
        // SAFETY: `len` initialised elements owned by `self`, and no copy
        // writes them any more (waited above; starting one needs `&mut self`).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) })
    }

    /// The elements to fill, after the copy in flight (an upload from it) is done.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.wait()?;
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only view.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) })
    }

    /// Copies `src` in (same length), after the copy in flight is done.
    pub fn copy_from_slice(&mut self, src: &[T]) -> Result<()> {
        if src.len() != self.len {
            return Err(Error::ElementCount {
                op: "PinnedBuffer::copy_from_slice",
                shape: vec![self.len],
                expected: self.len,
                got: src.len(),
            });
        }
        self.as_mut_slice()?.copy_from_slice(src);
        Ok(())
    }

    /// The raw bytes, for a copy the copy stream queues without waiting:
    /// the copy must record `flight.event` after it, so that the host's
    /// next access waits for it.
    pub(crate) fn bytes_for_copy(&mut self) -> &mut [u8] {
        // SAFETY: `len * size_of::<T>()` bytes owned by `self`; `&mut self`
        // makes this the only view from the host.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.as_ptr().cast::<u8>(),
                self.len * std::mem::size_of::<T>(),
            )
        }
    }

    /// The event of the last copy and whether it may still be running.
    pub(crate) fn last_copy(&mut self) -> (sys::CUevent, bool) {
        let f = self.flight.get_mut().unwrap_or_else(|p| p.into_inner());
        (f.event, f.pending)
    }

    /// Marks a copy queued (its event recorded), keeping `keep` alive until it is done.
    pub(crate) fn mark_in_flight(&mut self, keep: Option<Arc<Storage>>) {
        let f = self.flight.get_mut().unwrap_or_else(|p| p.into_inner());
        f.pending = true;
        f.keep = keep;
    }

    fn lock_flight(&self) -> MutexGuard<'_, InFlight> {
        self.flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn settle(&self, f: &mut InFlight) -> Result<()> {
        if !f.pending {
            return Ok(());
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| error::driver("PinnedBuffer::wait", &self.device.name(), e))?;
        // SAFETY: the event is live (destroyed only in drop).
        unsafe { result::event::synchronize(f.event) }
            .map_err(|e| error::driver("PinnedBuffer::wait", &self.device.name(), e))?;
        f.pending = false;
        f.keep = None;
        Ok(())
    }
}

impl<T: Element> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        let flight = self.flight.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = self.ctx.bind_to_thread();
        // A copy still reading or writing the memory must finish before it
        // is freed; cuMemFreeHost does not wait for it.
        // SAFETY: the event is live until destroyed here, once.
        unsafe {
            if flight.pending {
                let _ = result::event::synchronize(flight.event);
            }
            let _ = result::event::destroy(flight.event);
        }
        flight.keep = None;
        if self.len != 0 && std::mem::size_of::<T>() != 0 {
            // SAFETY: allocated by malloc_host in `new`, freed once.
            unsafe {
                let _ = result::free_host(self.ptr.as_ptr().cast());
            }
        }
    }
}

impl<T: Element> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PinnedBuffer<{}>({} elements on {})",
            T::DTYPE,
            self.len,
            self.device
        )
    }
}
