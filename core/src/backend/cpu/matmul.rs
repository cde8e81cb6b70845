//! Matmul on the CPU: the `gemm` crate (packed, SIMD, multi-threaded) for
//! float types with any strides, so transposed views cost nothing; a plain
//! loop for i32. The epilogue then runs over the product in chunks.

use crate::backend::cpu::access::store_typed;
use crate::backend::cpu::compute::Compute;
use crate::backend::cpu::eval::{eval_chunk, Scratch};
use crate::backend::cpu::map::{walks, Linear, BLOCK, CHUNK};
use crate::backend::cpu::par::for_blocks;
#[cfg(feature = "rayon")]
use crate::backend::cpu::par::threads;
use crate::backend::cpu::storage::{try_vec_with_capacity, try_zeroed};
use crate::backend::cpu::CpuStorage;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::layout::Layout;
use crate::schedule::kernel::{ExprNode, MatmulBody};
use crate::shape::next_coords;

/// Storage offsets of every batch matrix of `l` (shape `[batch.., r, c]`).
fn batch_offsets(l: &Layout, batch: &[usize]) -> Vec<isize> {
    let count: usize = batch.iter().product();
    let mut offs = Vec::with_capacity(count);
    let mut coords = vec![0usize; batch.len()];
    for _ in 0..count {
        let mut o = l.offset as isize;
        for (i, &c) in coords.iter().enumerate() {
            o += c as isize * l.strides[i];
        }
        offs.push(o);
        next_coords(&mut coords, batch);
    }
    offs
}

/// A float view of a storage for gemm: f32/f64 as is, halves widened once.
enum FloatSrc<'a, T> {
    Borrowed(&'a [T]),
    Owned(Vec<T>),
}

impl<T> FloatSrc<'_, T> {
    fn slice(&self) -> &[T] {
        match self {
            FloatSrc::Borrowed(s) => s,
            FloatSrc::Owned(v) => v,
        }
    }
}

/// The operand as `T`: borrowed when it is stored as `T`, else converted
/// into a fallibly allocated copy (an f16 operand of 600M elements needs
/// 2.4 GB as f32, which a wasm32 heap cannot hold: an error, not a trap).
fn as_float<T: Compute + Element>(s: &CpuStorage) -> Result<FloatSrc<'_, T>> {
    if let Some(v) = T::native(s) {
        return Ok(FloatSrc::Borrowed(v));
    }
    crate::with_storage!(s, |v| {
        let mut out = try_vec_with_capacity("matmul", v.len())?;
        out.extend(v.iter().map(|&x| T::from_elem(x)));
        Ok(FloatSrc::Owned(out))
    })
}

/// Raw pointers handed to worker threads, each writing its own batch matrix.
struct Shared<T>(*const T, *const T, *mut T);
// SAFETY: the inputs are only read; each task writes the disjoint output
// matrix of its own batch index.
unsafe impl<T> Sync for Shared<T> {}
unsafe impl<T> Send for Shared<T> {}

fn gemm_batched<T: Compute + 'static>(mm: &MatmulBody, a: &[T], b: &[T], dst: &mut [T]) {
    let (m, n, k) = (mm.m, mm.n, mm.k);
    let ra = mm.a.rank();
    let (a_rs, a_cs) = (mm.a.strides[ra - 2], mm.a.strides[ra - 1]);
    let (b_rs, b_cs) = (mm.b.strides[ra - 2], mm.b.strides[ra - 1]);
    let a_offs = batch_offsets(&mm.a, &mm.batch);
    let b_offs = batch_offsets(&mm.b, &mm.batch);
    let batches = a_offs.len();
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        dst.fill(T::ZERO);
        return;
    }
    let ptrs = Shared(a.as_ptr(), b.as_ptr(), dst.as_mut_ptr());
    let one = |bi: usize, par: gemm::Parallelism| {
        let p = &ptrs;
        // SAFETY: offsets come from layouts bounds-checked against these
        // storages, so every (i, k) / (k, j) element gemm reads is inside
        // `a`/`b`; the destination matrix `bi` is `m*n` elements inside `dst`.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                p.2.add(bi * m * n),
                1,
                n as isize,
                false,
                p.0.offset(a_offs[bi]),
                a_cs,
                a_rs,
                p.1.offset(b_offs[bi]),
                b_cs,
                b_rs,
                T::ZERO,
                T::ONE,
                false,
                false,
                false,
                par,
            )
        }
    };
    #[cfg(feature = "rayon")]
    {
        if batches >= threads() && batches > 1 {
            use rayon::prelude::*;
            (0..batches)
                .into_par_iter()
                .for_each(|bi| one(bi, gemm::Parallelism::None));
            return;
        }
        let par = if m * n * k >= 64 * 64 * 64 {
            gemm::Parallelism::Rayon(threads())
        } else {
            gemm::Parallelism::None
        };
        for bi in 0..batches {
            one(bi, par);
        }
    }
    #[cfg(not(feature = "rayon"))]
    for bi in 0..batches {
        one(bi, gemm::Parallelism::None);
    }
}

/// i32 matmul with wrapping arithmetic, as integer GEMMs on GPUs do.
fn int_matmul(mm: &MatmulBody, a: &[i32], b: &[i32], dst: &mut [f64]) {
    let ra = mm.a.rank();
    let (a_rs, a_cs) = (mm.a.strides[ra - 2], mm.a.strides[ra - 1]);
    let (b_rs, b_cs) = (mm.b.strides[ra - 2], mm.b.strides[ra - 1]);
    for (bi, (ao, bo)) in batch_offsets(&mm.a, &mm.batch)
        .into_iter()
        .zip(batch_offsets(&mm.b, &mm.batch))
        .enumerate()
    {
        for i in 0..mm.m {
            for j in 0..mm.n {
                let mut s: i32 = 0;
                for kk in 0..mm.k {
                    let x = a[(ao + i as isize * a_rs + kk as isize * a_cs) as usize];
                    let y = b[(bo + kk as isize * b_rs + j as isize * b_cs) as usize];
                    s = s.wrapping_add(x.wrapping_mul(y));
                }
                dst[bi * mm.m * mm.n + i * mm.n + j] = s as f64;
            }
        }
    }
}

pub fn run_matmul(
    mm: &MatmulBody,
    args: &[&CpuStorage],
    out: &mut CpuStorage,
) -> crate::Result<()> {
    let total: usize = mm.out_shape().iter().product();
    let plain = mm.epilogue.nodes.len() == 1 && matches!(mm.epilogue.nodes[mm.out], ExprNode::Acc);
    match mm.acc_dtype {
        DType::F64 => {
            let (a, b) = (as_float::<f64>(args[0])?, as_float::<f64>(args[1])?);
            let mut acc = try_zeroed::<f64>("matmul", total)?;
            gemm_batched(mm, a.slice(), b.slice(), &mut acc);
            epilogue::<f64>(mm, args, &acc, out);
        }
        DType::I32 => {
            let (CpuStorage::I32(a), CpuStorage::I32(b)) = (args[0], args[1]) else {
                return Err(crate::Error::Backend {
                    op: "matmul",
                    message: "i32 matmul needs i32 operands".into(),
                });
            };
            let mut acc = try_zeroed::<f64>("matmul", total)?;
            int_matmul(mm, a, b, &mut acc);
            epilogue::<f64>(mm, args, &acc, out);
        }
        _ => {
            let (a, b) = (as_float::<f32>(args[0])?, as_float::<f32>(args[1])?);
            if let (true, CpuStorage::F32(o)) = (plain, &mut *out) {
                gemm_batched(mm, a.slice(), b.slice(), o);
                return Ok(());
            }
            let mut acc = try_zeroed::<f32>("matmul", total)?;
            gemm_batched(mm, a.slice(), b.slice(), &mut acc);
            epilogue::<f32>(mm, args, &acc, out);
        }
    }
    Ok(())
}

fn epilogue<T: Compute>(mm: &MatmulBody, args: &[&CpuStorage], acc: &[T], out: &mut CpuStorage) {
    crate::with_storage!(out, |o| epilogue_typed(mm, args, acc, o))
}

fn epilogue_typed<T: Compute, E: Element>(
    mm: &MatmulBody,
    args: &[&CpuStorage],
    acc: &[T],
    out: &mut [E],
) {
    let live = mm.epilogue.reachable(&[mm.out]);
    let walks = walks(&mm.epilogue);
    let shape = mm.out_shape();
    for_blocks(out, BLOCK, |bi, block| {
        let mut scratch = Scratch::<T>::new(&mm.epilogue);
        let base = bi * BLOCK;
        for (ci, chunk) in block.chunks_mut(CHUNK).enumerate() {
            let start = base + ci * CHUNK;
            let pos = Linear {
                expr: &mm.epilogue,
                walks: &walks,
                args,
                shape: &shape,
                start,
            };
            scratch.new_chunk();
            eval_chunk(
                &mm.epilogue,
                &live,
                chunk.len(),
                &pos,
                &[],
                Some(&acc[start..start + chunk.len()]),
                &mut scratch,
            );
            store_typed(chunk, &scratch.bufs[mm.out]);
        }
    });
}
