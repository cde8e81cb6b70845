//! Evaluates a kernel expression over one chunk of positions: every live
//! node becomes a dense buffer, each op one tight loop over the chunk.

use crate::backend::cpu::compute::{
    binary_chunk, cast_chunk, unary_chunk, wrap_chunk, Compute, Operand,
};
use crate::dtype::DType;
use crate::graph::op::UnaryOp;
use crate::rng;
use crate::schedule::kernel::{Expr, ExprId, ExprNode};

/// What the positions of a chunk are, as the expression needs them.
pub trait Positions<T: Compute> {
    /// Fills `out` with load node `node`'s values at the chunk's positions.
    fn load(&self, node: ExprId, out: &mut [T]);
    /// Coordinate along `axis` of the domain at each position.
    fn coord(&self, axis: usize, out: &mut [T]);
    /// Row-major linear index in the domain at each position.
    fn linear(&self, out: &mut [u32]);
    /// The values of load node `node` as they sit in storage, when they are
    /// dense and already of the compute type: read in place, never copied.
    fn direct(&self, _node: ExprId, _len: usize) -> Option<&[T]> {
        None
    }
    /// Fills `out` with stage `s`'s value at each position, when stage
    /// values vary within a chunk (the column kernel's chunks span many
    /// rows); `false` means one value per chunk, from `eval_chunk`'s `stages`.
    fn stage(&self, _s: usize, _out: &mut [T]) -> bool {
        false
    }
}

/// Per-thread buffers, reused from chunk to chunk.
pub struct Scratch<T> {
    pub bufs: Vec<Vec<T>>,
    pub lin: Vec<u32>,
    /// Nodes already computed for the current chunk. A row kernel whose row
    /// fits in one chunk evaluates its stages and output over the same
    /// positions, so loads and shared subexpressions are computed once per
    /// row (stage results never change once their stage is done).
    pub valid: Vec<bool>,
    /// Loads read in place this chunk (their `bufs` entry is not filled).
    pub direct: Vec<bool>,
    /// Nodes whose value is the same at every position of a chunk
    /// (constants, stage values and ops of those: a row's `1 / sum`) and
    /// that only binary ops or other such nodes read: they are computed
    /// once, as a scalar, and binary ops take them as scalar operands. Their
    /// buffers are filled only when one is a root (what the caller reads).
    scalar_only: Vec<bool>,
    /// Nodes of `scalar_only` whose buffer is not filled this chunk.
    unfilled: Vec<bool>,
    /// The value of each `unfilled` node.
    scalars: Vec<T>,
}

impl<T: Compute> Scratch<T> {
    pub fn new(expr: &Expr) -> Self {
        Self::with_stages(expr, true)
    }

    /// `uniform_stages: false` for positions whose [`Positions::stage`]
    /// gives stage values per position: they are then ordinary buffers.
    pub fn with_stages(expr: &Expr, uniform_stages: bool) -> Self {
        let n = expr.len();
        let children: Vec<Vec<ExprId>> = (0..n).map(|i| expr.children(i)).collect();
        // Uniform over a chunk (children come before their users).
        let mut scalar_only = vec![false; n];
        for i in 0..n {
            scalar_only[i] = match expr.nodes[i] {
                ExprNode::Const(_) => true,
                ExprNode::StageRef(_) => uniform_stages,
                ExprNode::Unary(..) | ExprNode::Binary(..) | ExprNode::Cast(..) => {
                    children[i].iter().all(|&c| scalar_only[c])
                }
                _ => false,
            };
        }
        // Keep only nodes every user of which takes a scalar (a binary op, or
        // a node itself computed as a scalar) and whose children are kept
        // (a scalar is computed from its children's scalars). Dropping one
        // can drop the nodes it reads and the nodes that read it, so repeat
        // until nothing changes (expressions are small).
        loop {
            let mut changed = false;
            for u in 0..n {
                if scalar_only[u] && children[u].iter().any(|&c| !scalar_only[c]) {
                    scalar_only[u] = false;
                    changed = true;
                }
                let takes_scalars = scalar_only[u] || matches!(expr.nodes[u], ExprNode::Binary(..));
                for &c in &children[u] {
                    if scalar_only[c] && !takes_scalars {
                        scalar_only[c] = false;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Scratch {
            bufs: vec![Vec::new(); n],
            lin: Vec::new(),
            valid: vec![false; n],
            direct: vec![false; n],
            scalar_only,
            unfilled: vec![false; n],
            scalars: vec![T::ZERO; n],
        }
    }

    /// Forgets all values: the next evaluation is at new positions.
    pub fn new_chunk(&mut self) {
        self.valid.fill(false);
    }
}

/// `out = op(src)` for a unary node of `dtype` (integer results wrap).
fn unary_node<T: Compute>(op: UnaryOp, dtype: DType, src: &[T], out: &mut [T]) {
    unary_chunk(op, src, out);
    if dtype.is_int() {
        wrap_chunk(dtype, out);
    }
}

/// Rounds `out` (a copy of a `from` value) to `to`, as a cast node does.
fn cast_node<T: Compute>(to: DType, from: DType, out: &mut [T]) {
    if to != DType::F64 && from != to {
        cast_chunk(to, out);
    }
}

/// Evaluates nodes `live` (in order) for `len` positions, skipping nodes
/// still valid since the last [`Scratch::new_chunk`]. Afterwards
/// `scratch.bufs[id]` holds node `id`'s values.
pub fn eval_chunk<T: Compute>(
    expr: &Expr,
    live: &[ExprId],
    len: usize,
    pos: &dyn Positions<T>,
    stages: &[T],
    acc: Option<&[T]>,
    scratch: &mut Scratch<T>,
) {
    eval_nodes(expr, live, len, pos, stages, acc, scratch, None);
}

/// [`eval_chunk`] for a kernel without stages or accumulator whose root
/// (the last of `live`) is written straight into `out` (`len` values)
/// instead of a scratch buffer: a map kernel whose output has the compute
/// type skips copying every chunk from scratch into the output.
/// `scratch.bufs[root]` is left as it was.
pub fn eval_chunk_into<T: Compute>(
    expr: &Expr,
    live: &[ExprId],
    pos: &dyn Positions<T>,
    scratch: &mut Scratch<T>,
    out: &mut [T],
) {
    eval_nodes(expr, live, out.len(), pos, &[], None, scratch, Some(out));
}

/// An operand: the in-place slice of a direct load, or the node's buffer.
fn arg<'a, T: Compute>(
    pos: &'a dyn Positions<T>,
    bufs: &'a [Vec<T>],
    direct: &[bool],
    i: ExprId,
    len: usize,
) -> &'a [T] {
    if direct[i] {
        if let Some(d) = pos.direct(i, len) {
            return d;
        }
    }
    &bufs[i]
}

/// The value of scalar-only node `i`, from its children's values: the
/// same chunk functions as [`fill_node`] uses, on one element, so the
/// results match.
fn scalar<T: Compute>(expr: &Expr, i: ExprId, stages: &[T], vals: &[T]) -> T {
    let mut o = [T::ZERO];
    match &expr.nodes[i] {
        ExprNode::Const(s) => o[0] = T::from_f64(s.value),
        ExprNode::StageRef(s) => o[0] = stages[*s],
        ExprNode::Unary(op, a) => unary_node(*op, expr.dtypes[i], &[vals[*a]], &mut o),
        ExprNode::Binary(op, a, b) => {
            let (x, y) = (Operand::Scalar(vals[*a]), Operand::Scalar(vals[*b]));
            binary_chunk(*op, expr.dtypes[*a], x, y, &mut o);
        }
        ExprNode::Cast(to, a) => {
            o[0] = vals[*a];
            cast_node(*to, expr.dtypes[*a], &mut o);
        }
        _ => unreachable!("only uniform nodes are scalar-only"),
    }
    o[0]
}

/// Writes node `i`'s values at the chunk's `buf.len()` positions into
/// `buf`, reading its children from `scratch` (all already evaluated).
fn fill_node<T: Compute>(
    expr: &Expr,
    i: ExprId,
    pos: &dyn Positions<T>,
    stages: &[T],
    acc: Option<&[T]>,
    scratch: &mut Scratch<T>,
    buf: &mut [T],
) {
    let len = buf.len();
    let dtype = expr.dtypes[i];
    let (bufs, direct) = (&scratch.bufs, &scratch.direct);
    match &expr.nodes[i] {
        ExprNode::Load { .. } => pos.load(i, buf),
        ExprNode::Const(s) => buf.fill(T::from_f64(s.value)),
        ExprNode::Unary(op, a) => unary_node(*op, dtype, arg(pos, bufs, direct, *a, len), buf),
        ExprNode::Binary(op, a, b) => {
            let operand = |k: ExprId| {
                if scratch.unfilled[k] {
                    Operand::Scalar(scratch.scalars[k])
                } else {
                    Operand::Slice(arg(pos, bufs, direct, k, len))
                }
            };
            binary_chunk(*op, expr.dtypes[*a], operand(*a), operand(*b), buf);
        }
        ExprNode::Where(c, a, b) => {
            let (c, a, b) = (
                arg(pos, bufs, direct, *c, len),
                arg(pos, bufs, direct, *a, len),
                arg(pos, bufs, direct, *b, len),
            );
            for (j, o) in buf.iter_mut().enumerate() {
                *o = if c[j] != T::ZERO { a[j] } else { b[j] };
            }
        }
        ExprNode::Cast(to, a) => {
            buf.copy_from_slice(arg(pos, bufs, direct, *a, len));
            cast_node(*to, expr.dtypes[*a], buf);
        }
        ExprNode::Coord(axis) => pos.coord(*axis, buf),
        ExprNode::Rand { seed, normal } => {
            let mut lin = std::mem::take(&mut scratch.lin);
            lin.clear();
            lin.resize(len, 0);
            pos.linear(&mut lin);
            let key = rng::seed_key(*seed);
            for (o, &l) in buf.iter_mut().zip(&lin) {
                let v = if *normal {
                    rng::normal(key, l)
                } else {
                    rng::uniform(key, l)
                };
                *o = T::from_f64(v as f64);
            }
            scratch.lin = lin;
        }
        ExprNode::StageRef(s) => {
            if !pos.stage(*s, buf) {
                buf.fill(stages[*s]);
            }
        }
        ExprNode::Acc => match acc {
            Some(a) => buf.copy_from_slice(&a[..len]),
            None => buf.fill(T::ZERO),
        },
    }
}

/// [`eval_chunk`], with the root written into `root_out` when given.
/// Kept out of line so both entry points call one copy. (LLVM already made
/// that choice for the wasm builds: their size did not change with or
/// without the attribute.)
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn eval_nodes<T: Compute>(
    expr: &Expr,
    live: &[ExprId],
    len: usize,
    pos: &dyn Positions<T>,
    stages: &[T],
    acc: Option<&[T]>,
    scratch: &mut Scratch<T>,
    mut root_out: Option<&mut [T]>,
) {
    let root = live.last().copied();
    for &i in live {
        if Some(i) == root {
            if let Some(out) = root_out.as_deref_mut() {
                // Its children are evaluated (they come first in `live`).
                if scratch.scalar_only[i] {
                    let v = scalar(expr, i, stages, &scratch.scalars);
                    out.fill(v);
                } else {
                    fill_node(expr, i, pos, stages, acc, scratch, out);
                }
                return;
            }
        }
        if scratch.valid[i] {
            continue;
        }
        scratch.valid[i] = true;
        scratch.direct[i] = false;
        scratch.unfilled[i] = false;
        if scratch.scalar_only[i] {
            // Its children are scalar-only too, so already in `scalars`.
            // A root's buffer is filled from it at the end.
            scratch.scalars[i] = scalar(expr, i, stages, &scratch.scalars);
            scratch.unfilled[i] = true;
            continue;
        }
        if matches!(expr.nodes[i], ExprNode::Load { .. })
            && Some(i) != root
            && pos.direct(i, len).is_some()
        {
            scratch.direct[i] = true;
            continue;
        }
        let mut buf = std::mem::take(&mut scratch.bufs[i]);
        // Every arm of `fill_node` overwrites all `len` values, so the
        // buffer is only sized, not cleared (zeroing it was a whole extra
        // pass per node).
        buf.resize(len, T::ZERO);
        fill_node(expr, i, pos, stages, acc, scratch, &mut buf);
        scratch.bufs[i] = buf;
    }
    // Callers read the root from `bufs`: a scalar root is spread over its
    // buffer, and a load that was read in place by an earlier evaluation of
    // this chunk and is the root now gets its copy.
    if let Some(r) = root {
        if scratch.unfilled[r] {
            let v = scratch.scalars[r];
            let buf = &mut scratch.bufs[r];
            buf.clear();
            buf.resize(len, v);
            scratch.unfilled[r] = false;
        }
        if scratch.direct[r] {
            let mut buf = std::mem::take(&mut scratch.bufs[r]);
            buf.clear();
            buf.resize(len, T::ZERO);
            pos.load(r, &mut buf);
            scratch.bufs[r] = buf;
            scratch.direct[r] = false;
        }
    }
}

/// True when any node of the kernel holds an f64 or i32 value, which the
/// fast path then computes in f64 to stay exact.
pub fn needs_f64(expr: &Expr, out: DType) -> bool {
    out == DType::F64
        || out == DType::I32
        || expr
            .dtypes
            .iter()
            .any(|&d| d == DType::F64 || d == DType::I32)
}
