//! Runs a schedule on a CUDA device: the CPU executor's structure (slots,
//! steps, outputs, the profiler hook) with device buffers from the caching
//! allocator, matmuls through cuBLASLt and everything else as generated
//! kernels. Nothing here waits for the device, except that the profiler,
//! when on, times each kernel between two CUDA events and waits for the
//! second, so its times are the GPU's own.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use fusegraph_core::backend::cpu::CpuStorage;
use fusegraph_core::backend::Storage;
use fusegraph_core::schedule::{Body, BufRef, IndexBody, Kernel, Schedule};
use fusegraph_core::{Device, Error, Result};

use super::alloc::CudaBuffer;
use super::backend::{nbytes, CudaBackend};
use super::blas::Blas;
use super::event_timer::EventTimer;
use super::kernels::launch;

/// Launches one kernel; `ptrs` are its arguments followed by its output.
fn run_kernel(be: &CudaBackend, k: &Arc<Kernel>, ptrs: &mut Vec<u64>) -> Result<()> {
    if k.out_numel() == 0 {
        return Ok(());
    }
    if let Body::Conv(c) = &k.body {
        let dnn = be.dnn.as_ref().ok_or_else(|| Error::Backend {
            op: c.pass.name(),
            message: format!(
                "{}: convolution nodes need cuDNN, which is not loaded",
                be.name
            ),
        })?;
        return dnn.run(k, c, ptrs, |bytes| be.alloc(bytes));
    }
    if let (Body::Matmul(_), Some(blas)) = (&k.body, &be.blas) {
        if let Some(g) = blas.gemm(k, ptrs)? {
            let out = *ptrs.last().unwrap_or(&0);
            return match &g.epilogue {
                None => blas.run(&g, ptrs, out, be.cu_stream()),
                Some(ep) => {
                    // Product to scratch, then the generated epilogue reads it.
                    let scratch = be.alloc(Blas::scratch_bytes(&g))?;
                    blas.run(&g, ptrs, scratch.ptr(), be.cu_stream())?;
                    let l = be.kernels.get(ep)?;
                    ptrs.insert(ptrs.len() - 1, scratch.ptr());
                    launch(&l, ptrs, be.cu_stream(), &be.name)
                }
            };
        }
    }
    let l = be.kernels.get(k)?;
    launch(&l, ptrs, be.cu_stream(), &be.name)
}

/// Index kernels clamp out-of-range indices on the device (never an
/// out-of-bounds read); to report `IndexOutOfRange` as the CPU does, the
/// indices are read back and checked first (one small copy and a wait).
/// Inside a graph capture nothing can be read back, so the check is skipped.
fn check_indices(be: &CudaBackend, k: &Kernel, ix: &IndexBody, idx_ptr: u64) -> Result<()> {
    let info = &k.args[1];
    let mut host = CpuStorage::zeros(info.dtype, info.len);
    be.read_into(idx_ptr, &mut host)?;
    let size = ix.src.shape[ix.axis];
    for p in ix.idx.indices() {
        let raw = host.get_f64(p) as i64;
        let i = if raw < 0 { raw + size as i64 } else { raw };
        if i < 0 || i >= size as i64 {
            return Err(Error::IndexOutOfRange {
                op: if ix.gather { "gather" } else { "index_select" },
                index: raw,
                axis: ix.axis,
                size,
            });
        }
    }
    Ok(())
}

fn missing(what: &str) -> Error {
    Error::Backend {
        op: "cuda execute",
        message: format!("{what} was not computed"),
    }
}

pub(crate) fn execute(
    be: &CudaBackend,
    s: &Schedule,
    leaves: &[Arc<Storage>],
) -> Result<Vec<Arc<Storage>>> {
    let leaf_ptrs: Vec<u64> = leaves.iter().map(|l| be.ptr_of(l)).collect::<Result<_>>()?;
    let mut slots: Vec<Option<CudaBuffer>> = (0..s.plan.slots.len()).map(|_| None).collect();
    let profiling = fusegraph_core::profile::enabled() && !be.capturing.load(Ordering::Relaxed);
    let timer = if profiling {
        Some(EventTimer::new(&be.name)?)
    } else {
        None
    };
    let mut ptrs: Vec<u64> = Vec::with_capacity(8);
    for step in &s.steps {
        let info = s
            .plan
            .slots
            .get(step.out)
            .ok_or_else(|| missing("an output slot"))?;
        if slots[step.out].is_none() {
            slots[step.out] = Some(be.alloc(nbytes(info.dtype, info.len))?);
        }
        ptrs.clear();
        for a in &step.args {
            ptrs.push(match a {
                BufRef::Leaf(l) => *leaf_ptrs.get(*l).ok_or_else(|| missing("a leaf"))?,
                BufRef::Slot(i) => slots
                    .get(*i)
                    .and_then(|b| b.as_ref())
                    .map(|b| b.ptr())
                    .ok_or_else(|| missing("a kernel argument"))?,
            });
        }
        ptrs.push(slots[step.out].as_ref().map(|b| b.ptr()).unwrap_or(0));
        if let Body::Index(ix) = &step.kernel.body {
            if !be.capturing.load(Ordering::Relaxed) && step.kernel.out_numel() > 0 {
                check_indices(be, &step.kernel, ix, ptrs[1])?;
            }
        }
        match &timer {
            Some(t) => fusegraph_core::profile::time_kernel_measured(&step.kernel, || {
                t.time(be.cu_stream(), || run_kernel(be, &step.kernel, &mut ptrs))
                    .map(Some)
            })?,
            // Inside a capture the profiler records the launch alone.
            None => fusegraph_core::profile::time_kernel(&step.kernel, || {
                run_kernel(be, &step.kernel, &mut ptrs)
            })?,
        }
    }
    let device = Device::Cuda(be.ordinal);
    let mut done: Vec<Option<Arc<Storage>>> = vec![None; slots.len()];
    s.outputs
        .iter()
        .map(|o| match o.buf {
            BufRef::Leaf(l) => leaves
                .get(l)
                .cloned()
                .ok_or_else(|| missing("a leaf output")),
            BufRef::Slot(i) => {
                if done[i].is_none() {
                    let info = &s.plan.slots[i];
                    done[i] = slots[i].take().map(|b| {
                        Arc::new(Storage::Device {
                            device,
                            dtype: info.dtype,
                            len: info.len,
                            buffer: Box::new(b),
                        })
                    });
                }
                done[i].clone().ok_or_else(|| missing("an output"))
            }
        })
        .collect()
    // Intermediate slots drop here and return to the pool, in stream order.
}
