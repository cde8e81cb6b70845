//! Map kernels: the domain is split into blocks across threads and each
//! block into cache-sized chunks, evaluated node by node; the last node
//! writes straight into the output when the output has the compute type.

use crate::backend::cpu::access::{gather, store_typed, Walk};
use crate::backend::cpu::compute::Compute;
use crate::backend::cpu::eval::{eval_chunk, eval_chunk_into, needs_f64, Positions, Scratch};
use crate::backend::cpu::par::for_blocks;
use crate::backend::cpu::CpuStorage;
use crate::dtype::Element;
use crate::schedule::kernel::{Expr, ExprId, ExprNode, MapBody};

/// Elements per chunk of the row, column and matmul-epilogue kernels: a
/// few KiB per live node, so a chunk stays in L1/L2.
pub const CHUNK: usize = 2048;
/// Elements per chunk of a map kernel. Larger than [`CHUNK`]: a map kernel
/// pays its per-chunk setup (one pass over the expression, one call per
/// node) for every chunk of a stream that is read once, and each op's loop
/// streams its inputs longer between those calls. On wasm (V8, one
/// thread), 8192 ran relu(a*b+c) 1.13-1.19x faster than 2048 on 1M and 16M
/// elements, 512 ran it 0.85x, and 32768 was no faster than 8192.
const MAP_CHUNK: usize = 8192;
/// Elements per parallel task.
pub const BLOCK: usize = 64 * 1024;

/// Positions `start..start+len` of a row-major domain.
pub struct Linear<'a> {
    pub expr: &'a Expr,
    pub walks: &'a [Option<Walk>],
    pub args: &'a [&'a CpuStorage],
    pub shape: &'a [usize],
    pub start: usize,
}

impl<T: Compute> Positions<T> for Linear<'_> {
    fn load(&self, node: ExprId, out: &mut [T]) {
        if let (ExprNode::Load { arg, .. }, Some(w)) = (&self.expr.nodes[node], &self.walks[node]) {
            gather(self.args[*arg], w, self.start, out);
        }
    }
    fn coord(&self, axis: usize, out: &mut [T]) {
        let inner: usize = self.shape[axis + 1..].iter().product();
        let d = self.shape[axis];
        for (j, o) in out.iter_mut().enumerate() {
            *o = T::from_f64((((self.start + j) / inner) % d) as f64);
        }
    }
    fn linear(&self, out: &mut [u32]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = (self.start + j) as u32;
        }
    }
    fn direct(&self, node: ExprId, len: usize) -> Option<&[T]> {
        match (&self.expr.nodes[node], &self.walks[node]) {
            (ExprNode::Load { arg, .. }, Some(w)) if w.dense() => {
                let o = w.offset as usize + self.start;
                T::native(self.args[*arg]).and_then(|v| v.get(o..o + len))
            }
            _ => None,
        }
    }
}

/// Walks for every load node of `expr`.
pub fn walks(expr: &Expr) -> Vec<Option<Walk>> {
    expr.nodes
        .iter()
        .map(|n| match n {
            ExprNode::Load { access, .. } => Some(Walk::new(access)),
            _ => None,
        })
        .collect()
}

pub fn run_map(m: &MapBody, args: &[&CpuStorage], out: &mut CpuStorage) {
    use CpuStorage as S;
    let wide = needs_f64(&m.expr, out.dtype());
    // One arm per (compute type, output type) pair that can occur, so no
    // dead pair is compiled (the wasm builds have a size budget). An output
    // of the compute type takes the root straight into it (no scratch
    // buffer, no copy per chunk); the others are stored converted.
    match (out, wide) {
        (S::F64(o), _) => map_typed::<f64, f64, InPlace>(m, args, o),
        (S::F32(o), false) => map_typed::<f32, f32, InPlace>(m, args, o),
        (S::F32(o), true) => map_typed::<f64, _, Converted>(m, args, o),
        // An i32 output always computes in f64 (see `needs_f64`).
        (S::I32(o), _) => map_typed::<f64, _, Converted>(m, args, o),
        (S::F16(o), false) => map_typed::<f32, _, Converted>(m, args, o),
        (S::F16(o), true) => map_typed::<f64, _, Converted>(m, args, o),
        (S::BF16(o), false) => map_typed::<f32, _, Converted>(m, args, o),
        (S::BF16(o), true) => map_typed::<f64, _, Converted>(m, args, o),
        (S::U8(o), false) => map_typed::<f32, _, Converted>(m, args, o),
        (S::U8(o), true) => map_typed::<f64, _, Converted>(m, args, o),
        (S::Bool(o), false) => map_typed::<f32, _, Converted>(m, args, o),
        (S::Bool(o), true) => map_typed::<f64, _, Converted>(m, args, o),
    }
}

/// How a map kernel's chunks of output type `E` are seen as compute type
/// `T`: as they are when `E` is `T`, else not at all. A type parameter
/// rather than a function value, so each instantiation of [`map_typed`]
/// carries only the branch it takes.
trait AsCompute<T, E> {
    fn as_compute(out: &mut [E]) -> Option<&mut [T]>;
}

/// The output has the compute type.
struct InPlace;
impl<T> AsCompute<T, T> for InPlace {
    #[inline(always)]
    fn as_compute(out: &mut [T]) -> Option<&mut [T]> {
        Some(out)
    }
}

/// The output has another type than the compute type.
struct Converted;
impl<T, E> AsCompute<T, E> for Converted {
    #[inline(always)]
    fn as_compute(_: &mut [E]) -> Option<&mut [T]> {
        None
    }
}

/// Runs the map kernel into `out`. `A` gives `out`'s chunks as
/// the compute type when they are of it (`E` is `T`), so the root is
/// evaluated into them in place; otherwise the root goes to scratch and is
/// stored converted.
fn map_typed<T: Compute, E: Element, A: AsCompute<T, E>>(
    m: &MapBody,
    args: &[&CpuStorage],
    out: &mut [E],
) {
    let live = m.expr.reachable(&[m.out]);
    let walks = walks(&m.expr);
    // Below this many elements a second thread costs more to wake than it saves.
    const PAR_MIN: usize = 1 << 18;
    let block = if out.len() < PAR_MIN {
        out.len().max(1)
    } else {
        BLOCK
    };
    for_blocks(out, block, |bi, block_out| {
        let mut scratch = Scratch::<T>::new(&m.expr);
        let base = bi * block;
        for (ci, chunk) in block_out.chunks_mut(MAP_CHUNK).enumerate() {
            let pos = Linear {
                expr: &m.expr,
                walks: &walks,
                args,
                shape: &m.shape,
                start: base + ci * MAP_CHUNK,
            };
            scratch.new_chunk();
            let len = chunk.len();
            match A::as_compute(chunk) {
                Some(dst) => eval_chunk_into(&m.expr, &live, &pos, &mut scratch, dst),
                None => {
                    eval_chunk(&m.expr, &live, len, &pos, &[], None, &mut scratch);
                    // `as_compute` gave the chunk back only when it is `T`.
                    store_typed(chunk, &scratch.bufs[m.out]);
                }
            }
        }
    });
}
