//! Data-movement kernels: concat, index_select and gather.

use crate::backend::cpu::CpuStorage;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::schedule::kernel::{ConcatBody, IndexBody};
use crate::shape::next_coords;

pub fn run_concat(c: &ConcatBody, args: &[&CpuStorage], out: &mut CpuStorage) -> Result<()> {
    let full = Layout::contiguous(&c.shape);
    let mut start = 0;
    for (part, src) in c.parts.iter().zip(args) {
        let len = part.shape.get(c.axis).copied().unwrap_or(0);
        let dst = full.narrow(c.axis as isize, start, len)?;
        copy_view(src, part, out, &dst)?;
        start += len;
    }
    Ok(())
}

/// Copies the elements of view `from` of `src` to view `to` (same shape)
/// of `dst`, a run along the last axis at a time (a slice copy when both
/// runs are dense): no index list is allocated, and the bounds of both
/// views are checked once, up front.
fn copy_view(src: &CpuStorage, from: &Layout, dst: &mut CpuStorage, to: &Layout) -> Result<()> {
    let n = from.checked_numel("concat")?;
    if n == 0 {
        return Ok(());
    }
    if from.shape != to.shape {
        return Err(Error::Backend {
            op: "concat",
            message: format!("view {:?} copied into view {:?}", from.shape, to.shape),
        });
    }
    from.check_bounds("concat", src.len())?;
    to.check_bounds("concat", dst.len())?;
    // Runs along the last axis; a rank-0 view is one run of one element.
    let rank = from.rank();
    let (run, fs, ts) = match rank {
        0 => (1, 1, 1),
        _ => (
            from.shape[rank - 1],
            from.strides[rank - 1],
            to.strides[rank - 1],
        ),
    };
    let outer = &from.shape[..rank.saturating_sub(1)];
    let runs: usize = outer.iter().product();
    let mut coords = vec![0usize; outer.len()];
    // Both views lie inside their buffers (checked above), so every index
    // below is in range.
    let start = |l: &Layout, coords: &[usize]| {
        coords
            .iter()
            .zip(&l.strides)
            .fold(l.offset as isize, |a, (&c, &s)| a + c as isize * s) as usize
    };
    macro_rules! arm {
        ($($v:ident),*) => {
            match (src, dst) {
                $((CpuStorage::$v(s), CpuStorage::$v(d)) => {
                    for _ in 0..runs {
                        let (f, t) = (start(from, &coords), start(to, &coords));
                        if fs == 1 && ts == 1 {
                            d[t..t + run].copy_from_slice(&s[f..f + run]);
                        } else {
                            for k in 0..run as isize {
                                d[(t as isize + k * ts) as usize] = s[(f as isize + k * fs) as usize];
                            }
                        }
                        next_coords(&mut coords, outer);
                    }
                    Ok(())
                })*
                (s, d) => Err(Error::DTypeMismatch { op: "concat", lhs: s.dtype(), rhs: d.dtype() }),
            }
        };
    }
    arm!(Bool, U8, I32, F16, BF16, F32, F64)
}

/// Storage index of `coords` in `l`, in i64 (on wasm32 a coordinate past
/// 2^31 does not fit in `isize`), or `None` when it is not a valid index.
fn storage_index(l: &Layout, coords: &[usize]) -> Option<usize> {
    let mut idx = i64::try_from(l.offset).ok()?;
    for (&c, &s) in coords.iter().zip(&l.strides) {
        if s != 0 {
            idx = idx.checked_add(i64::try_from(c).ok()?.checked_mul(s as i64)?)?;
        }
    }
    usize::try_from(idx).ok()
}

pub fn run_index(ix: &IndexBody, args: &[&CpuStorage], out: &mut CpuStorage) -> Result<()> {
    let op = if ix.gather { "gather" } else { "index_select" };
    let broken = |message: String| Error::Backend { op, message };
    let (Some(&src), Some(&idx_store)) = (args.first(), args.get(1)) else {
        return Err(broken(format!("expected 2 arguments, got {}", args.len())));
    };
    let size = ix.src.shape.get(ix.axis).copied().unwrap_or(0);
    let n = Layout::contiguous(&ix.shape).checked_numel(op)?;
    if out.len() != n || ix.axis >= ix.shape.len() {
        return Err(broken(format!(
            "output of {} elements for shape {:?} on axis {}",
            out.len(),
            ix.shape,
            ix.axis
        )));
    }
    // Sizes past i64::MAX cannot occur; saturating keeps the check total.
    let size_i = i64::try_from(size).unwrap_or(i64::MAX);
    let check = |raw: i64| -> Result<usize> {
        // Negative indices count from the end, as in PyTorch.
        let i = if raw < 0 {
            raw.saturating_add(size_i)
        } else {
            raw
        };
        if i < 0 || i >= size_i {
            return Err(Error::IndexOutOfRange {
                op,
                index: raw,
                axis: ix.axis,
                size,
            });
        }
        // 0 <= i < size, a usize.
        Ok(i as usize)
    };
    let index_at = |coords: &[usize]| -> Result<i64> {
        let at = storage_index(&ix.idx, coords)
            .filter(|&k| k < idx_store.len())
            .ok_or_else(|| {
                broken(format!(
                    "index position {coords:?} is outside the index buffer"
                ))
            })?;
        Ok(idx_store.get_f64(at) as i64)
    };
    if !ix.gather {
        // Every index is checked, also when the result is empty because
        // another axis has size 0 (as the reference path and PyTorch do).
        for j in 0..ix.idx.shape.first().copied().unwrap_or(0) {
            check(index_at(&[j])?)?;
        }
    }
    if n == 0 {
        return Ok(());
    }
    let mut coords = vec![0usize; ix.shape.len()];
    let mut src_coords = vec![0usize; ix.shape.len()];
    macro_rules! arm {
        ($($v:ident),*) => {
            match (src, out) {
                $((CpuStorage::$v(s), CpuStorage::$v(d)) => {
                    for slot in d.iter_mut() {
                        let raw = if ix.gather {
                            index_at(&coords)?
                        } else {
                            index_at(&coords[ix.axis..=ix.axis])?
                        };
                        src_coords.copy_from_slice(&coords);
                        src_coords[ix.axis] = check(raw)?;
                        let from = storage_index(&ix.src, &src_coords)
                            .and_then(|k| s.get(k))
                            .ok_or_else(|| broken(format!(
                                "source position {src_coords:?} is outside its buffer of {} elements",
                                s.len()
                            )))?;
                        *slot = *from;
                        next_coords(&mut coords, &ix.shape);
                    }
                    Ok(())
                })*
                (s, d) => Err(Error::DTypeMismatch { op, lhs: s.dtype(), rhs: d.dtype() }),
            }
        };
    }
    arm!(Bool, U8, I32, F16, BF16, F32, F64)
}
