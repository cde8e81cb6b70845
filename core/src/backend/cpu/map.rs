//! Map kernels: the domain is split into blocks across threads and each
//! block into cache-sized chunks, evaluated node by node.

use crate::backend::cpu::access::{gather, store_typed, Walk};
use crate::backend::cpu::compute::Compute;
use crate::backend::cpu::eval::{eval_chunk, needs_f64, Positions, Scratch};
use crate::backend::cpu::par::for_blocks;
use crate::backend::cpu::CpuStorage;
use crate::dtype::Element;
use crate::schedule::kernel::{Expr, ExprId, ExprNode, MapBody};

/// Elements per chunk: a few KiB per live node, so a chunk stays in L1/L2.
pub const CHUNK: usize = 2048;
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
    if needs_f64(&m.expr, out.dtype()) {
        crate::with_storage!(out, |o| map_typed::<f64, _>(m, args, o))
    } else {
        crate::with_storage!(out, |o| map_typed::<f32, _>(m, args, o))
    }
}

fn map_typed<T: Compute, E: Element>(m: &MapBody, args: &[&CpuStorage], out: &mut [E]) {
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
        let block = block_out;
        for (ci, chunk) in block.chunks_mut(CHUNK).enumerate() {
            let pos = Linear {
                expr: &m.expr,
                walks: &walks,
                args,
                shape: &m.shape,
                start: base + ci * CHUNK,
            };
            scratch.new_chunk();
            eval_chunk(&m.expr, &live, chunk.len(), &pos, &[], None, &mut scratch);
            store_typed(chunk, &scratch.bufs[m.out]);
        }
    });
}
