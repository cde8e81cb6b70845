//! The CUDA device behind `Device::Cuda(n)`: its context, one stream for all
//! kernels and copies (so the caching allocator may reuse memory in stream
//! order), the kernel and cuBLASLt caches, and the core's `Backend` trait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

use cudarc::driver::{result, sys, CudaContext, CudaStream};
use fusegraph_core::backend::cpu::decomp::Decomposition;
use fusegraph_core::backend::cpu::CpuStorage;
use fusegraph_core::backend::{Backend, Storage};
use fusegraph_core::schedule::Schedule;
use fusegraph_core::{DType, Device, Error, Limits, Result};

use super::alloc::{CudaBuffer, Pool};
use super::blas::{Blas, WORKSPACE_BYTES};
use super::dnn::Dnn;
use super::kernels::KernelCache;
use super::solver::{self, SolverSlot};
use super::{error, exec, loader, nvrtc};

/// One opened CUDA GPU.
pub struct CudaBackend {
    pub(crate) ordinal: usize,
    pub(crate) name: String,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) pool: Arc<Pool>,
    pub(crate) kernels: KernelCache,
    /// `None` when cuBLASLt is not installed: matmuls use generated kernels.
    pub(crate) blas: Option<Blas>,
    /// `None` when cuDNN is not installed: convolutions are im2col + matmul.
    pub(crate) dnn: Option<Dnn>,
    /// Serialises launches and the caches' descriptors across threads.
    pub(crate) lock: Mutex<()>,
    pub(crate) capturing: AtomicBool,
    /// The thread capturing a graph; other threads wait until it is done.
    capture_owner: Mutex<Option<ThreadId>>,
    capture_done: Condvar,
    pub(crate) arch: u32,
    /// `None` when cuSOLVER is not installed: decompositions go through the host.
    pub(crate) solver: Option<SolverSlot>,
    describe: String,
    /// Set by the [`CudaBackend::lose_device`] test hook: every later call
    /// reports `DeviceLost`, as after a driver reset.
    lost: AtomicBool,
}

fn unavailable(n: usize, why: String) -> Error {
    Error::DeviceUnavailable {
        op: "Device::cuda",
        device: format!("cuda:{n}"),
        why,
    }
}

impl CudaBackend {
    /// Opens GPU `n`: driver, context, stream, NVRTC check, cuBLASLt.
    pub fn open(n: usize) -> Result<Arc<CudaBackend>> {
        if !loader::driver_present() {
            return Err(unavailable(
                n,
                "no CUDA driver (libcuda.so) on this machine".into(),
            ));
        }
        let count = {
            result::init().map_err(|e| unavailable(n, format!("cuInit failed: {e:?}")))?;
            result::device::get_count().map_err(|e| unavailable(n, format!("{e:?}")))?
        };
        if n >= count.max(0) as usize {
            return Err(unavailable(n, format!("{count} CUDA device(s) found")));
        }
        // NVRTC is required: every non-matmul kernel is generated.
        nvrtc::nvrtc_version().map_err(|e| unavailable(n, e.to_string()))?;
        let dev = format!("cuda:{n}");
        let ctx = CudaContext::new(n).map_err(|e| unavailable(n, format!("{e:?}")))?;
        // One stream, so our own buffers need no cross-stream tracking.
        // SAFETY: fusegraph orders every access to its buffers on one stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| error::driver("Device::cuda", &dev, e))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| error::driver("Device::cuda", &dev, e))?;
        let arch = (major * 10 + minor) as u32;
        let name = ctx.name().unwrap_or_else(|_| "CUDA GPU".into());
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .unwrap_or(0);
        let mem = ctx.total_mem().unwrap_or(0);
        let mut driver = 0i32;
        // SAFETY: an out-pointer to a live local.
        unsafe { sys::cuDriverGetVersion(&mut driver) };
        let (rm, rn) = nvrtc::nvrtc_version().unwrap_or((0, 0));
        let pool = Pool::new(dev.clone());
        let blas = if loader::cublaslt_present() {
            let ws = pool.alloc(WORKSPACE_BYTES, &|| Ok(()))?;
            Some(Blas::new(ws, dev.clone())?)
        } else {
            None
        };
        let cusolver = loader::cusolver_present();
        let dnn = if loader::cudnn_present() {
            Some(Dnn::new(stream.cu_stream())?)
        } else {
            None
        };
        let dnn_version = dnn
            .as_ref()
            .map_or_else(|| "not found".to_string(), |d| format!("{}", d.version));
        let describe = format!(
            "{name} (sm_{arch}, {sms} SMs, {:.0} GiB, CUDA driver {}.{}, NVRTC {rm}.{rn}, cuBLASLt {}, cuSOLVER {}, cuDNN {dnn_version})",
            mem as f64 / (1u64 << 30) as f64,
            driver / 1000,
            (driver % 1000) / 10,
            if blas.is_some() { "loaded" } else { "not found" },
            if cusolver { "loaded" } else { "not found" }
        );
        Ok(Arc::new(CudaBackend {
            ordinal: n,
            name: dev.clone(),
            ctx,
            stream,
            pool,
            kernels: KernelCache::new(arch, dev, sms),
            blas,
            dnn,
            lock: Mutex::new(()),
            capturing: AtomicBool::new(false),
            capture_owner: Mutex::new(None),
            capture_done: Condvar::new(),
            arch,
            solver: cusolver.then(SolverSlot::new),
            describe,
            lost: AtomicBool::new(false),
        }))
    }

    pub(crate) fn bind(&self) -> Result<()> {
        if self.lost.load(Ordering::Acquire) {
            return Err(Error::DeviceLost {
                op: "cuda",
                device: self.name.clone(),
                why: "marked lost by CudaBackend::lose_device".into(),
            });
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| error::driver("cuda", &self.name, e))
    }

    pub(crate) fn guard(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits while another thread captures a CUDA graph on this device (its
    /// stream would record our work into that graph), then returns with
    /// the capture owner locked out of changing.
    fn wait_for_capture(&self) -> MutexGuard<'_, Option<ThreadId>> {
        let me = std::thread::current().id();
        let mut owner = self.capture_owner.lock().unwrap_or_else(|p| p.into_inner());
        while owner.is_some_and(|t| t != me) {
            owner = self
                .capture_done
                .wait(owner)
                .unwrap_or_else(|p| p.into_inner());
        }
        owner
    }

    /// The execution lock, once no other thread is capturing.
    pub(crate) fn enter(&self) -> MutexGuard<'_, ()> {
        let owner = self.wait_for_capture();
        let g = self.guard();
        drop(owner);
        g
    }

    /// Marks the calling thread as capturing (after other threads' work is queued).
    pub(crate) fn begin_capture_owner(&self) -> MutexGuard<'_, ()> {
        let mut owner = self.wait_for_capture();
        *owner = Some(std::thread::current().id());
        let g = self.guard();
        drop(owner);
        g
    }

    /// Ends the calling thread's capture and wakes waiting threads.
    pub(crate) fn end_capture_owner(&self) {
        *self.capture_owner.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.capture_done.notify_all();
    }

    pub(crate) fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    /// Waits for the stream (refused while a graph is being captured).
    pub(crate) fn sync_stream(&self) -> Result<()> {
        if self.capturing.load(Ordering::Relaxed) {
            return Err(Error::Backend {
                op: "cuda synchronize",
                message: "cannot wait for the device while a CUDA graph is being captured".into(),
            });
        }
        // SAFETY: our live stream.
        unsafe { result::stream::synchronize(self.cu_stream()) }
            .map_err(|e| error::driver("cuda synchronize", &self.name, e))
    }

    /// A pool buffer of `bytes` (the context must be current).
    /// Test hook: behave as a device lost to a driver reset; every later
    /// call on this backend returns [`Error::DeviceLost`]. (The context stays
    /// alive, so buffers already handed out are freed normally.)
    pub fn lose_device(&self) {
        self.lost.store(true, Ordering::Release);
    }

    pub(crate) fn alloc(&self, bytes: usize) -> Result<CudaBuffer> {
        fusegraph_core::backend::fault::check_allocation(
            self.device(),
            "cuda alloc",
            bytes as u64,
        )?;
        let capturing = self.capturing.load(Ordering::Relaxed);
        self.pool.alloc(bytes, &|| {
            if capturing {
                Ok(())
            } else {
                self.sync_stream()
            }
        })
    }

    /// The device pointer behind a storage of this device.
    pub(crate) fn ptr_of(&self, s: &Storage) -> Result<u64> {
        match s {
            Storage::Device { device, buffer, .. } if *device == Device::Cuda(self.ordinal) => {
                buffer
                    .as_any()
                    .downcast_ref::<CudaBuffer>()
                    .map(|b| b.ptr())
                    .ok_or_else(|| Error::Backend {
                        op: "cuda",
                        message: format!("a {device} storage that is not a CUDA buffer"),
                    })
            }
            other => Err(Error::DeviceMismatch {
                op: "cuda execute",
                lhs: self.name.clone(),
                rhs: other.device().name(),
            }),
        }
    }

    /// (bytes the pool holds, bytes of it cached for reuse).
    pub fn memory_stats(&self) -> (usize, usize) {
        self.pool.stats()
    }

    /// The compute capability as `major * 10 + minor` (90 on H100/H200).
    pub fn arch(&self) -> u32 {
        self.arch
    }
}

impl CudaBackend {
    /// Copies `out.len()` elements from `ptr` into `out` and waits for them.
    pub(crate) fn read_into(&self, ptr: u64, out: &mut CpuStorage) -> Result<()> {
        let dst = bytes_of_mut(out);
        if dst.is_empty() {
            return Ok(());
        }
        if self.capturing.load(Ordering::Relaxed) {
            return Err(Error::Backend {
                op: "cuda download",
                message: "cannot read a tensor back while a CUDA graph is being captured".into(),
            });
        }
        // SAFETY: the device buffer holds at least `dst.len()` bytes.
        unsafe { result::memcpy_dtoh_async(dst, ptr, self.cu_stream()) }
            .map_err(|e| error::driver("cuda download", &self.name, e))?;
        self.sync_stream()
    }
}

fn bytes_of(s: &CpuStorage) -> &[u8] {
    fusegraph_core::with_storage!(s, |v| {
        // SAFETY: every storage element type is plain data (bool is one
        // byte holding 0 or 1); the byte view covers exactly the vector.
        unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice()))
        }
    })
}

fn bytes_of_mut(s: &mut CpuStorage) -> &mut [u8] {
    fusegraph_core::with_storage!(s, |v| {
        // SAFETY: as in `bytes_of`; the device only ever holds 0 or 1 in a
        // bool buffer (kernels store `v ? 1 : 0`), so the bytes stay valid.
        unsafe {
            std::slice::from_raw_parts_mut(
                v.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(v.as_slice()),
            )
        }
    })
}

impl Backend for CudaBackend {
    fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn limits(&self) -> Limits {
        // CUDA kernels take any number of pointer parameters; the CPU's
        // limit keeps kernels (and their compile times) the same size. Long
        // reductions are split so that they fill the multiprocessors, and
        // per-channel ones so that they also read in memory order.
        Limits {
            split_long_reductions: true,
            split_column_reductions: true,
            native_conv2d: self.dnn.is_some(),
            ..Limits::cpu()
        }
    }

    fn upload(&self, data: &CpuStorage) -> Result<Storage> {
        let _g = self.enter();
        self.bind()?;
        if self.capturing.load(Ordering::Relaxed) {
            return Err(Error::Backend {
                op: "cuda upload",
                message: "cannot copy host data to the device while a CUDA graph is being captured; upload inputs before capture".into(),
            });
        }
        let bytes = bytes_of(data);
        let buf = self.alloc(bytes.len())?;
        if !bytes.is_empty() {
            // SAFETY: the buffer holds at least `bytes.len()` bytes; a pageable
            // source is staged by the driver before the call returns.
            unsafe { result::memcpy_htod_async(buf.ptr(), bytes, self.cu_stream()) }
                .map_err(|e| error::driver("cuda upload", &self.name, e))?;
        }
        Ok(Storage::Device {
            device: self.device(),
            dtype: data.dtype(),
            len: data.len(),
            buffer: Box::new(buf),
        })
    }

    fn download(&self, data: &Storage) -> Result<CpuStorage> {
        let _g = self.enter();
        self.bind()?;
        let ptr = self.ptr_of(data)?;
        let mut out = CpuStorage::zeros(data.dtype(), data.len());
        self.read_into(ptr, &mut out)?;
        Ok(out)
    }

    fn execute(&self, schedule: &Schedule, leaves: &[Arc<Storage>]) -> Result<Vec<Arc<Storage>>> {
        let _g = self.enter();
        self.bind()?;
        exec::execute(self, schedule, leaves)
    }

    fn decompose(
        &self,
        kind: Decomposition,
        input: &Storage,
        batch: usize,
        m: usize,
        n: usize,
    ) -> Option<Result<Vec<Storage>>> {
        self.solver.as_ref()?;
        let _g = self.enter();
        Some(
            self.bind()
                .and_then(|()| solver::decompose(self, kind, input, batch, m, n)),
        )
    }

    fn copy(&self, src: &Storage, src_offset: usize, dst: &Storage, len: usize) -> Result<()> {
        let _g = self.enter();
        self.bind()?;
        let (from, to) = (self.ptr_of(src)?, self.ptr_of(dst)?);
        let size = src.dtype().size_in_bytes();
        src.check_copy_into("cuda copy", src_offset, dst, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: both buffers are live device memory of this context and
        // hold the ranges checked above; the copy is queued on the one
        // stream, behind the kernels that write `src` and read `dst`.
        unsafe {
            result::memcpy_dtod_async(
                to,
                from + (src_offset * size) as u64,
                len * size,
                self.cu_stream(),
            )
        }
        .map_err(|e| error::driver("cuda copy", &self.name, e))
    }

    fn synchronize(&self) -> Result<()> {
        drop(self.wait_for_capture());
        self.bind()?;
        self.sync_stream()
    }
}

/// Bytes of `len` elements of `dtype`.
pub(crate) fn nbytes(dtype: DType, len: usize) -> usize {
    dtype.size_in_bytes() * len
}
