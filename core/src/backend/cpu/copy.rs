//! Data-movement kernels: concat, index_select and gather.

use crate::backend::cpu::CpuStorage;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::schedule::kernel::{ConcatBody, IndexBody};

pub fn run_concat(c: &ConcatBody, args: &[&CpuStorage], out: &mut CpuStorage) -> Result<()> {
    let full = Layout::contiguous(&c.shape);
    let mut start = 0;
    for (part, src) in c.parts.iter().zip(args) {
        let len = part.shape[c.axis];
        let dst = full.narrow(c.axis as isize, start, len)?;
        copy_indices(src, &part.indices(), out, &dst.indices())?;
        start += len;
    }
    Ok(())
}

fn copy_indices(
    src: &CpuStorage,
    from: &[usize],
    dst: &mut CpuStorage,
    to: &[usize],
) -> Result<()> {
    macro_rules! arm {
        ($($v:ident),*) => {
            match (src, dst) {
                $((CpuStorage::$v(s), CpuStorage::$v(d)) => {
                    for (&f, &t) in from.iter().zip(to) {
                        d[t] = s[f];
                    }
                    Ok(())
                })*
                (s, d) => Err(Error::DTypeMismatch { op: "concat", lhs: s.dtype(), rhs: d.dtype() }),
            }
        };
    }
    arm!(Bool, U8, I32, F16, BF16, F32, F64)
}

pub fn run_index(ix: &IndexBody, args: &[&CpuStorage], out: &mut CpuStorage) -> Result<()> {
    let op = if ix.gather { "gather" } else { "index_select" };
    let size = ix.src.shape[ix.axis];
    let out_l = Layout::contiguous(&ix.shape);
    let idx_store = args[1];
    let n = out_l.numel();
    let check = |raw: i64| -> Result<i64> {
        // Negative indices count from the end, as in PyTorch.
        let i = if raw < 0 { raw + size as i64 } else { raw };
        if i < 0 || i >= size as i64 {
            return Err(Error::IndexOutOfRange {
                op,
                index: raw,
                axis: ix.axis,
                size,
            });
        }
        Ok(i)
    };
    if !ix.gather {
        // Every index is checked, also when the result is empty because
        // another axis has size 0 (as the reference path and PyTorch do).
        for j in 0..ix.idx.shape.first().copied().unwrap_or(0) {
            check(idx_store.get_f64(ix.idx.index_of(&[j])) as i64)?;
        }
    }
    let mut from = Vec::with_capacity(n);
    let mut coords = vec![0usize; ix.shape.len()];
    for _ in 0..n {
        let raw = if ix.gather {
            idx_store.get_f64(ix.idx.index_of(&coords))
        } else {
            idx_store.get_f64(ix.idx.index_of(&[coords[ix.axis]]))
        } as i64;
        let i = check(raw)?;
        let mut src_coords = coords.clone();
        src_coords[ix.axis] = i as usize;
        from.push(ix.src.index_of(&src_coords));
        for ax in (0..coords.len()).rev() {
            coords[ax] += 1;
            if coords[ax] < ix.shape[ax] {
                break;
            }
            coords[ax] = 0;
        }
    }
    let to: Vec<usize> = (0..n).collect();
    copy_indices(args[0], &from, out, &to).map_err(|_| Error::DTypeMismatch {
        op,
        lhs: args[0].dtype(),
        rhs: out.dtype(),
    })
}
