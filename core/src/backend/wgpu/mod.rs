//! The wgpu backend: [`Device::Wgpu`] on Vulkan, Metal and DX12 natively and
//! on the browser's WebGPU in wasm, through one code path.
//!
//! - **Opening** ([`open`], `Device::wgpu().await`, or natively
//!   `Device::wgpu_blocking()`): the high-performance adapter, a device with
//!   exactly the adapter's limits and its `shader-f16` feature when present
//!   (natively also `subgroup`, which row reductions then use).
//!   The fusion limit follows what was granted:
//!   `max_kernel_args = max_storage_buffers_per_shader_stage - 1` (one
//!   binding is the output), so on WebGPU's default of 8 a 12-input
//!   expression is split into kernels of at most 7 inputs.
//! - **Kernels**: every kernel of a schedule is rendered to WGSL by
//!   [`codegen::render`](crate::codegen::render) (fused elementwise and
//!   broadcast maps over strided inputs, row reductions with workgroup
//!   memory — softmax and layer norm are one kernel each — the tiled matmul
//!   of `shaders/matmul.wgsl` with its fused epilogue, concat and index),
//!   validated by naga inside wgpu, and cached as a pipeline keyed by
//!   [`codegen::kernel_hash`](crate::codegen::kernel_hash).
//! - **Memory**: buffers come from a pool by size class and go back when a
//!   tensor or a schedule slot drops them; read-back goes through a staging
//!   buffer. f32, i32, f16 (with `shader-f16`, else
//!   [`Error::UnsupportedDType`]), bf16/u8/bool packed into `u32` words;
//!   f64 is refused with [`Error::UnsupportedDType`].
//! - **Errors**: out-of-memory and validation errors are caught with error
//!   scopes and come back as [`Error::OutOfMemory`] / [`Error::Backend`];
//!   a lost device makes every later call return [`Error::DeviceLost`].
//!   In the browser, where scopes resolve asynchronously, such errors are
//!   reported by the next call; read back with [`download_async`] there.

mod context;
mod copy;
mod exec;
mod pipelines;
mod pool;
mod timer;
mod transfer;

use std::sync::{Arc, Mutex};

use crate::backend::cpu::CpuStorage;
use crate::backend::{Backend, Storage};
use crate::codegen::RenderOptions;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::passes::Limits;
use crate::schedule::Schedule;

use context::Gpu;
use pipelines::PipelineCache;
use pool::Pool;

pub use pool::WgpuBuffer;

/// The adapter and device behind [`Device::Wgpu`], with its caches.
pub struct WgpuBackend {
    gpu: Gpu,
    pool: Arc<Pool>,
    pipelines: PipelineCache,
    opts: RenderOptions,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// What the adapter granted, for logs and benchmark JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterDetails {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub shader_f16: bool,
    /// Subgroup operations (row reductions use them).
    pub subgroups: bool,
    /// The adapter's subgroup sizes, smallest and largest.
    pub subgroup_sizes: (u32, u32),
    /// Timestamp queries: the profiler records the GPU's own kernel times.
    pub timestamps: bool,
    pub max_storage_buffers_per_shader_stage: u32,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroup_storage_size: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub max_compute_workgroups_per_dimension: u32,
}

impl WgpuBackend {
    /// Opens a new device (not registered: see [`open`] for `Device::Wgpu`).
    pub async fn new() -> Result<Arc<WgpuBackend>> {
        let gpu = Gpu::open().await?;
        let opts = RenderOptions {
            shader_f16: gpu.has_f16(),
            subgroups: gpu.has_subgroups() && !crate::codegen::tree_reduce_forced(),
            max_storage_buffers: gpu.limits.max_storage_buffers_per_shader_stage,
            ..RenderOptions::wgsl()
        };
        Ok(Arc::new(WgpuBackend {
            gpu,
            pool: Pool::new(),
            pipelines: PipelineCache::default(),
            opts,
        }))
    }

    /// [`WgpuBackend::new`], blocking until the adapter answers (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_blocking() -> Result<Arc<WgpuBackend>> {
        pollster::block_on(WgpuBackend::new())
    }

    pub fn details(&self) -> AdapterDetails {
        let (i, l) = (&self.gpu.info, &self.gpu.limits);
        AdapterDetails {
            name: i.name.clone(),
            backend: format!("{:?}", i.backend),
            device_type: format!("{:?}", i.device_type),
            driver: format!("{} {}", i.driver, i.driver_info).trim().to_string(),
            shader_f16: self.gpu.has_f16(),
            subgroups: self.gpu.has_subgroups(),
            subgroup_sizes: (i.subgroup_min_size, i.subgroup_max_size),
            timestamps: self.gpu.features.contains(wgpu::Features::TIMESTAMP_QUERY),
            max_storage_buffers_per_shader_stage: l.max_storage_buffers_per_shader_stage,
            max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
            max_buffer_size: l.max_buffer_size,
            max_compute_workgroup_storage_size: l.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: l.max_compute_invocations_per_workgroup,
            max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
        }
    }

    /// The options kernels are rendered with on this adapter.
    pub fn render_options(&self) -> RenderOptions {
        self.opts
    }

    /// Pipelines compiled so far.
    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.len()
    }

    /// Bytes of free buffers the pool holds for reuse.
    pub fn pooled_bytes(&self) -> u64 {
        self.pool.parked_bytes()
    }

    /// Compiles a WGSL module as a kernel would be (naga validation, then the
    /// pipeline); the error names `label`. For tools and tests of the
    /// validation path.
    pub fn compile_wgsl(&self, label: &str, source: &str, entry: &str, buffers: u32) -> Result<()> {
        let bindings = (0..buffers)
            .map(|i| crate::codegen::BindingInfo {
                binding: i,
                dtype: crate::DType::F32,
                words: 1,
                read_only: i + 1 < buffers,
                packed: false,
            })
            .collect();
        let rendered = crate::codegen::RenderedKernel {
            name: label.to_string(),
            source: source.to_string(),
            entry: entry.to_string(),
            workgroup_size: [1, 1, 1],
            dispatch: [1, 1, 1],
            bindings,
        };
        pipelines::compile(&self.gpu, rendered).map(|_| ())
    }

    /// Test hook: destroys the device, as a driver reset would; every later
    /// call on this backend returns [`Error::DeviceLost`].
    pub fn lose_device(&self) {
        self.gpu.destroy();
    }

    /// Reads a storage of this backend back to the host, awaiting the copy
    /// (the browser's route; natively [`Backend::download`] blocks instead).
    pub async fn download_async(&self, data: &Storage) -> Result<CpuStorage> {
        let buf = exec::buffer_of(data, "wgpu download")?;
        let bytes = transfer::device_bytes(data.dtype(), data.len());
        let raw = transfer::read_async(&self.gpu, buf.raw(), bytes).await?;
        transfer::from_bytes(data.dtype(), data.len(), &raw)
    }
}

impl Backend for WgpuBackend {
    fn device(&self) -> Device {
        Device::Wgpu
    }

    fn describe(&self) -> String {
        let d = self.details();
        format!(
            "{} ({}, {}, {}), shader-f16 {}, subgroups {}, {} storage buffers per stage",
            d.name,
            d.backend,
            d.device_type,
            d.driver,
            if d.shader_f16 { "yes" } else { "no" },
            if d.subgroups {
                format!("{}-{}", d.subgroup_sizes.0, d.subgroup_sizes.1)
            } else {
                "no".into()
            },
            d.max_storage_buffers_per_shader_stage
        )
    }

    fn supports_dtype(&self, dtype: crate::DType) -> bool {
        match dtype {
            crate::DType::F64 => false,
            crate::DType::F16 => self.gpu.has_f16(),
            _ => true,
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            max_kernel_args: (self.gpu.limits.max_storage_buffers_per_shader_stage as usize)
                .saturating_sub(1)
                .max(1),
            fuse: true,
            split_long_reductions: true,
            // WGSL keeps a workgroup per row (see `Lang::serial_short_rows`).
            split_column_reductions: false,
            native_conv2d: false,
        }
    }

    fn upload(&self, data: &CpuStorage) -> Result<Storage> {
        let bytes = transfer::to_bytes(data)?;
        let buf = self
            .pool
            .take(&self.gpu, "wgpu upload", bytes.len() as u64)?;
        self.gpu.scoped("wgpu upload", bytes.len() as u64, || {
            self.gpu.queue.write_buffer(buf.raw(), 0, &bytes)
        })?;
        Ok(Storage::Device {
            device: Device::Wgpu,
            dtype: data.dtype(),
            len: data.len(),
            buffer: Box::new(buf),
        })
    }

    fn download(&self, data: &Storage) -> Result<CpuStorage> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            let buf = exec::buffer_of(data, "wgpu download")?;
            let bytes = transfer::device_bytes(data.dtype(), data.len());
            let raw = transfer::read_blocking(&self.gpu, buf.raw(), bytes)?;
            transfer::from_bytes(data.dtype(), data.len(), &raw)
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = data;
            Err(Error::Backend {
                op: "wgpu download",
                message:
                    "the browser cannot block on a GPU read: await WgpuBackend::download_async"
                        .into(),
            })
        }
    }

    fn execute(&self, schedule: &Schedule, leaves: &[Arc<Storage>]) -> Result<Vec<Arc<Storage>>> {
        exec::execute(self, schedule, leaves)
    }

    fn synchronize(&self) -> Result<()> {
        self.gpu.wait("synchronize")
    }

    fn copy(&self, src: &Storage, src_offset: usize, dst: &Storage, len: usize) -> Result<()> {
        copy::copy_into(&self.gpu, src, src_offset, dst, len)
    }
}

fn opened() -> &'static Mutex<Option<Arc<WgpuBackend>>> {
    static OPENED: std::sync::OnceLock<Mutex<Option<Arc<WgpuBackend>>>> =
        std::sync::OnceLock::new();
    OPENED.get_or_init(|| Mutex::new(None))
}

/// The backend serving [`Device::Wgpu`], when it was opened.
pub fn current() -> Option<Arc<WgpuBackend>> {
    opened().lock().ok().and_then(|o| o.clone())
}

/// Opens the adapter (once per process) and registers it as [`Device::Wgpu`].
pub async fn open() -> Result<Arc<WgpuBackend>> {
    if let Some(b) = current() {
        return Ok(b);
    }
    let b = WgpuBackend::new().await?;
    let mut o = opened().lock().unwrap_or_else(|e| e.into_inner());
    // Another caller may have finished first: keep theirs, so every tensor shares one device.
    if let Some(first) = o.as_ref() {
        return Ok(first.clone());
    }
    crate::backend::register(b.clone());
    *o = Some(b.clone());
    Ok(b)
}

/// [`open`], blocking until the adapter answers (native only).
#[cfg(not(target_arch = "wasm32"))]
pub fn open_blocking() -> Result<Arc<WgpuBackend>> {
    pollster::block_on(open())
}

/// Reads `data` (a storage of [`Device::Wgpu`]) back to the host, awaiting the copy.
pub async fn download_async(data: &Storage) -> Result<CpuStorage> {
    let be = current().ok_or_else(|| Error::DeviceUnavailable {
        op: "wgpu download",
        device: "wgpu".into(),
        why: "open it first with Device::wgpu()".into(),
    })?;
    be.download_async(data).await
}
