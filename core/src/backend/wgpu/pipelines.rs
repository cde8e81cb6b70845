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

#[derive(Default)]
pub(crate) struct PipelineCache {
    map: Mutex<HashMap<u64, Arc<Pipeline>>>,
}

impl PipelineCache {
    /// The pipeline of `kernel`: cached, or rendered and compiled now.
    pub fn get(&self, gpu: &Gpu, opts: &RenderOptions, kernel: &Kernel) -> Result<Arc<Pipeline>> {
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

/// Compiles a rendered kernel (validated by naga inside wgpu) into a pipeline.
pub(crate) fn compile(gpu: &Gpu, rendered: RenderedKernel) -> Result<Pipeline> {
    let name = rendered.name.clone();
    let built = gpu.scoped("compile_wgsl", 0, || {
        let module = gpu
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(&rendered.name),
                source: wgpu::ShaderSource::Wgsl(rendered.source.as_str().into()),
            });
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
