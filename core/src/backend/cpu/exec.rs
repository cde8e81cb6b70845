//! Runs a schedule on the CPU fast path.

use std::sync::Arc;

use crate::backend::cpu::{conv, copy, map, matmul, pool, reduce, CpuStorage};
use crate::backend::Storage;
use crate::error::{Error, Result};
use crate::schedule::kernel::{Body, Kernel};
use crate::schedule::plan::{BufRef, Schedule};

/// Runs one kernel into `out` (already sized for it).
pub fn run_kernel(k: &Kernel, args: &[&CpuStorage], out: &mut CpuStorage) -> Result<()> {
    match &k.body {
        Body::Map(m) => map::run_map(m, args, out),
        Body::Reduce(r) => reduce::run_reduce(r, args, out),
        Body::Matmul(mm) => matmul::run_matmul(mm, args, out)?,
        Body::Concat(c) => copy::run_concat(c, args, out)?,
        Body::Index(ix) => copy::run_index(ix, args, out)?,
        Body::Conv(c) => *out = conv::run_conv(c, k.out_dtype, args),
    }
    Ok(())
}

/// Executes every step and returns the storage of each graph output.
/// Leaves must be host storage (the runtime moves nothing between devices
/// on its own: mixing devices is an error before this point).
pub fn execute(s: &Schedule, leaves: &[Arc<Storage>]) -> Result<Vec<Arc<Storage>>> {
    let mut slots: Vec<Option<CpuStorage>> = vec![None; s.plan.slots.len()];
    for step in &s.steps {
        let info = &s.plan.slots[step.out];
        let mut out = match slots[step.out].take() {
            Some(st) if st.dtype() == info.dtype && st.len() == step.kernel.out_numel() => st,
            Some(st) if st.dtype() == info.dtype => {
                let mut st = st;
                st.try_resize(step.kernel.kind(), step.kernel.out_numel())?;
                st
            }
            _ => pool::take(
                step.kernel.kind(),
                step.kernel.out_dtype,
                step.kernel.out_numel(),
            )?,
        };
        {
            let args: Vec<&CpuStorage> = step
                .args
                .iter()
                .map(|a| match a {
                    BufRef::Leaf(l) => leaves.get(*l).and_then(|x| x.as_cpu()),
                    BufRef::Slot(i) => slots.get(*i).and_then(|x| x.as_ref()),
                })
                .collect::<Option<_>>()
                .ok_or(Error::Backend {
                    op: "execute",
                    message: "a kernel argument was not computed (or is not host data)".into(),
                })?;
            crate::profile::time_kernel(&step.kernel, || {
                run_kernel(&step.kernel, &args, &mut out)
            })?;
        }
        slots[step.out] = Some(out);
    }
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
                    pinned[i] = slots[i].take().map(|st| Arc::new(Storage::Cpu(st)));
                }
                pinned[i].clone().ok_or(Error::Backend {
                    op: "execute",
                    message: "output was not computed".into(),
                })
            }
        })
        .collect::<Result<Vec<_>>>()
        .inspect(|_| {
            // Intermediate buffers are done: offer them for the next run.
            for st in slots.into_iter().flatten() {
                pool::give(st);
            }
        })
}
