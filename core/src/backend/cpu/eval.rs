//! Evaluates a kernel expression over one chunk of positions: every live
//! node becomes a dense buffer, each op one tight loop over the chunk.

use crate::backend::cpu::compute::{binary_chunk, cast_chunk, unary_chunk, wrap_chunk, Compute};
use crate::dtype::DType;
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
}

impl<T: Compute> Scratch<T> {
    pub fn new(expr: &Expr) -> Self {
        Scratch {
            bufs: vec![Vec::new(); expr.len()],
            lin: Vec::new(),
            valid: vec![false; expr.len()],
            direct: vec![false; expr.len()],
        }
    }

    /// Forgets all values: the next evaluation is at new positions.
    pub fn new_chunk(&mut self) {
        self.valid.fill(false);
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
    // An operand: the in-place slice of a direct load, or the node's buffer.
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
    let root = live.last().copied();
    for &i in live {
        if scratch.valid[i] {
            continue;
        }
        scratch.valid[i] = true;
        scratch.direct[i] = false;
        if matches!(expr.nodes[i], ExprNode::Load { .. })
            && Some(i) != root
            && pos.direct(i, len).is_some()
        {
            scratch.direct[i] = true;
            continue;
        }
        let mut buf = std::mem::take(&mut scratch.bufs[i]);
        buf.clear();
        buf.resize(len, T::ZERO);
        let dtype = expr.dtypes[i];
        let (bufs, direct) = (&scratch.bufs, &scratch.direct);
        match &expr.nodes[i] {
            ExprNode::Load { .. } => pos.load(i, &mut buf),
            ExprNode::Const(s) => buf.fill(T::from_f64(s.value)),
            ExprNode::Unary(op, a) => {
                unary_chunk(*op, arg(pos, bufs, direct, *a, len), &mut buf);
                if dtype.is_int() {
                    wrap_chunk(dtype, &mut buf);
                }
            }
            ExprNode::Binary(op, a, b) => {
                let (x, y) = (
                    arg(pos, bufs, direct, *a, len),
                    arg(pos, bufs, direct, *b, len),
                );
                binary_chunk(*op, expr.dtypes[*a], x, y, &mut buf);
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
                if *to != DType::F64 && expr.dtypes[*a] != *to {
                    cast_chunk(*to, &mut buf);
                }
            }
            ExprNode::Coord(axis) => pos.coord(*axis, &mut buf),
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
            ExprNode::StageRef(s) => buf.fill(stages[*s]),
            ExprNode::Acc => match acc {
                Some(a) => buf.copy_from_slice(&a[..len]),
                None => buf.fill(T::ZERO),
            },
        }
        scratch.bufs[i] = buf;
    }
    // Callers read the root from `bufs`: a load that was read in place by an
    // earlier evaluation of this chunk and is the root now gets its copy.
    if let Some(r) = root {
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
