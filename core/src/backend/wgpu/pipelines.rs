//! Shader-module and pipeline cache, keyed by the kernel IR hash
//! ([`codegen::kernel_hash`]): a kernel of the same structure (shapes,
//! strides and expression) compiles once per process. wgpu validates every
//! module with naga when it is created; a module that fails becomes an
//! [`Error::Backend`] naming the kernel and carrying naga's message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::codegen::{self, BindingInfo, RenderOptions, RenderedKernel};
use crate::error::{Error, Result};
use crate::schedule::Kernel;

use super::context::Gpu;

/// A kernel ready to dispatch.
pub(crate) struct Pipeline {
    pub rendered: RenderedKernel,
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Pipelines the cache holds at most before it starts over.
const CAPACITY: usize = 4096;

/// A kernel's pipeline by the kernel's address, with the kernel kept
/// alive so the address is not reused.
#[cfg(not(target_arch = "wasm32"))]
type ByAddr = HashMap<usize, (Arc<Kernel>, Arc<Pipeline>)>;

#[derive(Default)]
pub(crate) struct PipelineCache {
    map: Mutex<HashMap<u64, Arc<Pipeline>>>,
    /// Natively, a first lookup by address: a cached schedule runs the same
    /// `Arc<Kernel>`s every time, and hashing a kernel's IR costs 2-4 µs, a
    /// tenth of a small op's host time. (Left out of the web build, which
    /// has no size to spare.)
    #[cfg(not(target_arch = "wasm32"))]
    by_addr: Mutex<ByAddr>,
}

impl PipelineCache {
    /// The pipeline of `kernel`: cached, or rendered and compiled now.
    pub fn get(
        &self,
        gpu: &Gpu,
        opts: &RenderOptions,
        kernel: &Arc<Kernel>,
    ) -> Result<Arc<Pipeline>> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            let addr = Arc::as_ptr(kernel) as usize;
            let lock = || self.by_addr.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, p)) = lock().get(&addr) {
                return Ok(p.clone());
            }
            let p = self.by_hash(gpu, opts, kernel)?;
            let mut m = lock();
            if m.len() >= CAPACITY {
                m.clear();
            }
            m.insert(addr, (kernel.clone(), p.clone()));
            Ok(p)
        }
        #[cfg(target_arch = "wasm32")]
        self.by_hash(gpu, opts, kernel)
    }

    fn by_hash(&self, gpu: &Gpu, opts: &RenderOptions, kernel: &Kernel) -> Result<Arc<Pipeline>> {
        let key = codegen::kernel_hash(kernel);
        if let Some(p) = self.lock().get(&key) {
            return Ok(p.clone());
        }
        let rendered = codegen::render(kernel, opts)?;
        let p = Arc::new(compile(gpu, rendered)?);
        let mut map = self.lock();
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(key, p.clone());
        Ok(p)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Pipeline>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The bind group layout of a kernel: its bindings, all storage buffers in group 0.
fn layout_entries(bindings: &[BindingInfo]) -> Vec<wgpu::BindGroupLayoutEntry> {
    bindings
        .iter()
        .map(|b| wgpu::BindGroupLayoutEntry {
            binding: b.binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage {
                    read_only: b.read_only,
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect()
}

/// The runtime checks wgpu compiles into every generated kernel.
///
/// wgpu's defaults guard every loop with an iteration counter (so that the
/// driver's compiler cannot treat an endless loop as unreachable), every
/// integer division and remainder against a zero divisor and
/// `i32::MIN / -1`, and every index into an array. The renderer's loops all
/// stop at a bound fixed at render time, and it divides only by positive
/// constants (extents and tile sizes; kernels of zero elements are not
/// dispatched); integer division of tensor values goes through a helper
/// that handles a zero divisor itself. Those two guards therefore check
/// nothing, and they cost a third of the matmul's speed (H100, Vulkan:
/// 19.3 TFLOP/s with them, 29.6 without). They are always off.
///
/// Index checks stay on except on Vulkan, where wgpu enables the device's
/// robust buffer access (reads past a binding return zero or a value from
/// inside it, writes past it are dropped), so buffer accesses stay inside
/// their bindings without naga's help; what naga's checks would still guard
/// there are the workgroup and private arrays, which the renderer indexes
/// by invocation ids and constants. Their clamps cost the softmax row
/// kernel two thirds of its speed (0.245 ms with them, 0.079 ms without,
/// 4096x4096 f32 on the same H100). `FUSEGRAPH_WGPU_CHECKS=all` keeps
/// wgpu's full set, `bounds` keeps the index checks everywhere. A browser's
/// WebGPU applies its own checks whatever is asked here.
fn runtime_checks(backend: wgpu::Backend) -> wgpu::ShaderRuntimeChecks {
    let mut checks = wgpu::ShaderRuntimeChecks::checked();
    let mode = std::env::var("FUSEGRAPH_WGPU_CHECKS").unwrap_or_default();
    if mode == "all" {
        return checks;
    }
    checks.force_loop_bounding = false;
    checks.int_div_checks = false;
    checks.bounds_checks = mode == "bounds" || backend != wgpu::Backend::Vulkan;
    checks
}

/// Compiles a rendered kernel (validated by naga inside wgpu) into a pipeline.
pub(crate) fn compile(gpu: &Gpu, rendered: RenderedKernel) -> Result<Pipeline> {
    let name = rendered.name.clone();
    let built = gpu.scoped("compile_wgsl", 0, || {
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(&rendered.name),
            source: wgpu::ShaderSource::Wgsl(rendered.source.as_str().into()),
        };
        // SAFETY: `runtime_checks` drops only guards against what the
        // renderer never emits (endless loops, zero or overflowing
        // divisors, indices outside workgroup and private arrays) and, on
        // Vulkan, the buffer index checks the device's robust buffer
        // access makes redundant.
        let module = unsafe {
            gpu.device
                .create_shader_module_trusted(desc, runtime_checks(gpu.info.backend))
        };
        let layout = gpu
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(&rendered.name),
                entries: &layout_entries(&rendered.bindings),
            });
        let pipeline_layout = gpu
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(&rendered.name),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
        let pipeline = gpu
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&rendered.name),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(&rendered.entry),
                // Every generated kernel writes its workgroup arrays before a
                // barrier and reads them only after it, so wgpu's zeroing
                // prologue (a pass over the arrays in each workgroup) is
                // wasted work.
                compilation_options: wgpu::PipelineCompilationOptions {
                    zero_initialize_workgroup_memory: false,
                    ..Default::default()
                },
                cache: None,
            });
        (pipeline, layout)
    });
    match built {
        Ok((pipeline, layout)) => Ok(Pipeline {
            rendered,
            pipeline,
            layout,
        }),
        Err(Error::Backend { message, .. }) => Err(Error::Backend {
            op: "compile_wgsl",
            message: format!(
                "kernel {name} failed WGSL validation or pipeline creation: {message}"
            ),
        }),
        Err(e) => Err(e),
    }
}
