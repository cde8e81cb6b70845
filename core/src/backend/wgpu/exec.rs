//! Runs a schedule on the wgpu device: every kernel's pipeline from the
//! cache, every planned slot from the pool, one bind group per step, and all
//! dispatches in one compute pass of one submission (the queue orders them;
//! wgpu inserts the barriers between dispatches that share buffers). With
//! the profiler on, each kernel is submitted and waited for on its own and
//! timed by GPU timestamps where the adapter has them (else by the host
//! clock around the submission and the wait).

use std::num::NonZeroU64;
use std::sync::Arc;

use crate::backend::Storage;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::schedule::kernel::Body;
use crate::schedule::plan::{BufRef, Schedule};

use super::pool::WgpuBuffer;
use super::timer::PassTimer;
use super::transfer::device_bytes;
#[cfg(not(target_arch = "wasm32"))]
use super::transfer::{from_bytes, read_blocking};
use super::WgpuBackend;

/// The wgpu buffer behind a storage of this backend.
pub(crate) fn buffer_of<'a>(s: &'a Storage, op: &'static str) -> Result<&'a WgpuBuffer> {
    match s {
        Storage::Device {
            device: Device::Wgpu,
            buffer,
            ..
        } => buffer
            .as_any()
            .downcast_ref::<WgpuBuffer>()
            .ok_or(Error::Backend {
                op,
                message: "a wgpu storage holds a buffer of another backend".into(),
            }),
        other => Err(Error::DeviceMismatch {
            op,
            lhs: "wgpu".into(),
            rhs: other.device().name(),
        }),
    }
}

pub(crate) fn execute(
    be: &WgpuBackend,
    s: &Schedule,
    leaves: &[Arc<Storage>],
) -> Result<Vec<Arc<Storage>>> {
    let gpu = &be.gpu;
    gpu.check("execute")?;
    // A kernel with no output elements has nothing to do: it is not compiled or launched.
    let pipes = s
        .steps
        .iter()
        .map(|st| {
            if st.kernel.out_numel() == 0 {
                Ok(None)
            } else {
                be.pipelines.get(gpu, &be.opts, &st.kernel).map(Some)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let slots = s
        .plan
        .slots
        .iter()
        .map(|info| {
            be.pool
                .take(gpu, "execute", device_bytes(info.dtype, info.len))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut groups = Vec::with_capacity(s.steps.len());
    for (step, pipe) in s.steps.iter().zip(&pipes) {
        let Some(pipe) = pipe else {
            groups.push(None);
            continue;
        };
        let mut bufs: Vec<&WgpuBuffer> = Vec::with_capacity(step.args.len() + 1);
        for a in &step.args {
            bufs.push(match a {
                BufRef::Leaf(l) => buffer_of(
                    leaves.get(*l).ok_or(Error::Backend {
                        op: "execute",
                        message: format!("missing leaf {l}"),
                    })?,
                    "execute",
                )?,
                BufRef::Slot(i) => slots.get(*i).ok_or(Error::Backend {
                    op: "execute",
                    message: format!("missing slot {i}"),
                })?,
            });
        }
        bufs.push(&slots[step.out]);
        let bindings = &pipe.rendered.bindings;
        if bindings.len() != bufs.len() {
            return Err(Error::Backend {
                op: "execute",
                message: format!(
                    "kernel {} binds {} buffers, the step has {}",
                    pipe.rendered.name,
                    bindings.len(),
                    bufs.len()
                ),
            });
        }
        let mut entries = Vec::with_capacity(bufs.len());
        for (b, buf) in bindings.iter().zip(&bufs) {
            let bytes = b.words as u64 * 4;
            if bytes > buf.size() {
                return Err(Error::Backend {
                    op: "execute",
                    message: format!(
                        "kernel {} binding {} needs {bytes} bytes, its buffer has {}",
                        pipe.rendered.name,
                        b.binding,
                        buf.size()
                    ),
                });
            }
            entries.push(wgpu::BindGroupEntry {
                binding: b.binding,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: buf.raw(),
                    offset: 0,
                    size: NonZeroU64::new(bytes),
                }),
            });
        }
        groups.push(Some(gpu.scoped("execute", 0, || {
            gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&pipe.rendered.name),
                layout: &pipe.layout,
                entries: &entries,
            })
        })?));
    }
    let record = |pass: &mut wgpu::ComputePass<'_>, i: usize| {
        let (Some(pipe), Some(group)) = (&pipes[i], &groups[i]) else {
            return;
        };
        let d = pipe.rendered.dispatch;
        if d.contains(&0) {
            return;
        }
        pass.set_pipeline(&pipe.pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(d[0], d[1], d[2]);
    };
    let submit = |range: std::ops::Range<usize>, timer: Option<&PassTimer>| {
        if range.is_empty() {
            return Ok(());
        }
        gpu.scoped("execute", 0, || {
            let mut enc = gpu
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("fusegraph schedule"),
                });
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("fusegraph"),
                    timestamp_writes: timer.map(PassTimer::writes),
                });
                for i in range {
                    record(&mut pass, i);
                }
            }
            if let Some(t) = timer {
                t.resolve(&mut enc);
            }
            gpu.queue.submit([enc.finish()]);
        })
    };
    if crate::profile::enabled() {
        #[cfg(not(target_arch = "wasm32"))]
        let timer = PassTimer::new(gpu);
        #[cfg(target_arch = "wasm32")]
        let timer: Option<PassTimer> = None;
        for (i, step) in s.steps.iter().enumerate() {
            crate::profile::time_kernel_measured(&step.kernel, || {
                submit(i..i + 1, timer.as_ref())?;
                gpu.wait("execute")?;
                #[cfg(not(target_arch = "wasm32"))]
                if let Some(t) = &timer {
                    return t.read_ns(gpu).map(Some);
                }
                Ok(None)
            })?;
        }
    } else {
        // Index kernels clamp out-of-range indices on the GPU; the indices are
        // checked on the host first (after the kernels that compute them), so
        // a bad index is the same IndexOutOfRange error the CPU gives.
        let mut from = 0;
        for (i, step) in s.steps.iter().enumerate() {
            if let (Body::Index(ix), Some(arg)) = (&step.kernel.body, step.args.get(1)) {
                if step.kernel.out_numel() > 0 {
                    submit(from..i, None)?;
                    from = i;
                    let idx = match arg {
                        BufRef::Leaf(l) => leaves
                            .get(*l)
                            .map(|x| buffer_of(x, "execute"))
                            .transpose()?,
                        BufRef::Slot(k) => slots.get(*k),
                    };
                    #[cfg(not(target_arch = "wasm32"))]
                    if let (Some(buf), Some(info)) = (idx, step.kernel.args.get(1)) {
                        check_indices(be, ix, buf, info.dtype, info.len)?;
                    }
                    #[cfg(target_arch = "wasm32")]
                    let _ = (ix, idx); // the browser cannot wait for a read here: indices clamp
                }
            }
        }
        submit(from..s.steps.len(), None)?;
    }
    let mut slots: Vec<Option<WgpuBuffer>> = slots.into_iter().map(Some).collect();
    let mut pinned: Vec<Option<Arc<Storage>>> = vec![None; slots.len()];
    s.outputs
        .iter()
        .map(|o| match o.buf {
            BufRef::Leaf(l) => leaves.get(l).cloned().ok_or(Error::Backend {
                op: "execute",
                message: "missing leaf".into(),
            }),
            BufRef::Slot(i) => {
                if pinned[i].is_none() {
                    let info = &s.plan.slots[i];
                    pinned[i] = slots[i].take().map(|b| {
                        Arc::new(Storage::Device {
                            device: Device::Wgpu,
                            dtype: info.dtype,
                            len: info.len,
                            buffer: Box::new(b),
                        })
                    });
                }
                pinned[i].clone().ok_or(Error::Backend {
                    op: "execute",
                    message: "output was not computed".into(),
                })
            }
        })
        .collect()
    // The remaining slots drop here and park in the pool for the next run.
}

#[cfg(not(target_arch = "wasm32"))]
/// Reads the index argument of an index kernel back and checks every index
/// it will use, with the CPU's rule (negative counts from the end).
fn check_indices(
    be: &WgpuBackend,
    ix: &crate::schedule::kernel::IndexBody,
    buf: &WgpuBuffer,
    dtype: crate::DType,
    len: usize,
) -> Result<()> {
    let op = if ix.gather { "gather" } else { "index_select" };
    let raw = read_blocking(&be.gpu, buf.raw(), device_bytes(dtype, len))?;
    let values = from_bytes(dtype, len, &raw)?;
    let size = ix.src.shape[ix.axis] as i64;
    for pos in ix.idx.indices() {
        let v = values.get_f64(pos) as i64;
        let i = if v < 0 { v + size } else { v };
        if i < 0 || i >= size {
            return Err(Error::IndexOutOfRange {
                op,
                index: v,
                axis: ix.axis,
                size: size as usize,
            });
        }
    }
    Ok(())
}
