//! The kernel IR: what one launch computes, independent of the target.
//! Renderers turn it into WGSL or CUDA C; the CPU fast path interprets it
//! over chunks. Every kernel writes one output buffer and reads `args`.

use crate::dtype::{DType, Scalar};
use crate::graph::op::{BinaryOp, ConvGeometry, ConvPass, ReduceOp, UnaryOp};
use crate::layout::Layout;

/// Index of a node in an [`Expr`] arena.
pub type ExprId = usize;

/// One node of an elementwise expression. Nodes only refer to earlier nodes,
/// so the arena order is a valid evaluation order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ExprNode {
    /// Element of argument `arg` at the current position of the kernel
    /// domain; `access` has the domain's shape and strides into that
    /// argument's storage (0 for broadcast axes).
    Load {
        arg: usize,
        access: Layout,
    },
    Const(Scalar),
    Unary(UnaryOp, ExprId),
    Binary(BinaryOp, ExprId, ExprId),
    /// `cond ? a : b`.
    Where(ExprId, ExprId, ExprId),
    Cast(DType, ExprId),
    /// The current coordinate along one axis of the domain, as i32.
    Coord(usize),
    /// Counter-based random value for the current linear index of the domain.
    Rand {
        seed: u64,
        normal: bool,
    },
    /// In a reduce kernel: the finished value of stage `i` for the current row.
    StageRef(usize),
    /// In a matmul epilogue: the accumulated product at the current position.
    Acc,
}

/// An expression DAG with the dtype of every node. Build it with
/// [`Expr::push`], which keeps the DAG free of duplicate nodes.
#[derive(Debug, Clone, Default)]
pub struct Expr {
    pub nodes: Vec<ExprNode>,
    pub dtypes: Vec<DType>,
    /// Node → id, so `push` finds an identical node in O(1): fusing a chain
    /// of n ops re-imports growing expressions, and a linear scan here made
    /// that cubic in n.
    /// (Keyed by the node's hash: a key clone per push cost more than the
    /// lookup, and a rare collision falls back to a scan.)
    index: rustc_hash::FxHashMap<u64, ExprId>,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.nodes == other.nodes && self.dtypes == other.dtypes
    }
}

impl Expr {
    /// Appends a node (reusing an identical earlier one) and returns its id.
    pub fn push(&mut self, node: ExprNode, dtype: DType) -> ExprId {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        node.hash(&mut h);
        dtype.hash(&mut h);
        let key = h.finish();
        let same = |i: &ExprId| self.nodes[*i] == node && self.dtypes[*i] == dtype;
        if let Some(i) = self.index.get(&key) {
            if same(i) {
                return *i;
            }
            if let Some(i) = (0..self.nodes.len()).find(same) {
                return i;
            }
        }
        let id = self.nodes.len();
        self.nodes.push(node);
        self.dtypes.push(dtype);
        self.index.entry(key).or_insert(id);
        id
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// FLOPs to evaluate the nodes reachable from `roots` once.
    pub fn flops(&self, roots: &[ExprId]) -> u64 {
        self.reachable(roots)
            .into_iter()
            .map(|i| match &self.nodes[i] {
                ExprNode::Unary(op, _) => op.flops(),
                ExprNode::Binary(op, _, _) => op.flops(),
                ExprNode::Where(..) => 1,
                ExprNode::Rand { .. } => 8,
                _ => 0,
            })
            .sum()
    }

    /// Ids reachable from `roots`, in arena (evaluation) order.
    pub fn reachable(&self, roots: &[ExprId]) -> Vec<ExprId> {
        let mut live = vec![false; self.nodes.len()];
        for &r in roots {
            live[r] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if !live[i] {
                continue;
            }
            for c in self.children(i) {
                live[c] = true;
            }
        }
        (0..self.nodes.len()).filter(|&i| live[i]).collect()
    }

    /// Direct operands of node `i`.
    pub fn children(&self, i: ExprId) -> Vec<ExprId> {
        match &self.nodes[i] {
            ExprNode::Unary(_, a) | ExprNode::Cast(_, a) => vec![*a],
            ExprNode::Binary(_, a, b) => vec![*a, *b],
            ExprNode::Where(c, a, b) => vec![*c, *a, *b],
            _ => vec![],
        }
    }
}

/// Elementwise kernel over `shape`; the output is contiguous over it.
#[derive(Debug, Clone, PartialEq)]
pub struct MapBody {
    pub shape: Vec<usize>,
    pub expr: Expr,
    pub out: ExprId,
}

/// One reduction over the reduced axes of a row.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub op: ReduceOp,
    /// Evaluated at every element of the row; may use earlier stages' results.
    pub value: ExprId,
}

/// A row kernel: for every position of the kept ("outer") axes, run the
/// stages in order over the reduced axes, then write `out`. Softmax is two
/// stages (max, sum of exp) and a full-size output; variance is two stages
/// (mean, sum of squared deviations) and an outer-size output.
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceBody {
    /// The full iteration domain (the shape before reduction).
    pub shape: Vec<usize>,
    /// Reduced axes, sorted.
    pub axes: Vec<usize>,
    pub expr: Expr,
    pub stages: Vec<Stage>,
    pub out: ExprId,
    /// `true`: the output has `shape` (one value per element, like softmax);
    /// `false`: one value per row, contiguous over the kept axes (keepdim shape).
    pub out_full: bool,
}

impl ReduceBody {
    /// The output's shape with reduced axes kept as 1.
    pub fn keepdim_shape(&self) -> Vec<usize> {
        self.shape
            .iter()
            .enumerate()
            .map(|(i, &d)| if self.axes.contains(&i) { 1 } else { d })
            .collect()
    }

    /// True when the domain's last axis is kept and every load reads it with
    /// stride 1 or broadcasts it: neighbouring outputs along it then read
    /// neighbouring words at every row position (the column form of
    /// batch norm's per-channel sums of NHWC).
    pub fn keeps_contiguous_last_axis(&self) -> bool {
        let Some(last) = self.shape.len().checked_sub(1) else {
            return false;
        };
        !self.axes.contains(&last)
            && self.expr.nodes.iter().all(|n| match n {
                ExprNode::Load { access, .. } => matches!(access.strides.last(), Some(0 | 1)),
                _ => true,
            })
    }

    /// Number of elements in one row (product of reduced axes).
    pub fn row_len(&self) -> usize {
        self.axes.iter().map(|&a| self.shape[a]).product()
    }
}

/// `out[b, i, j] = epilogue(sum_k a[b, i, k] * b[b, k, j])`.
/// `a` and `b` are layouts over args 0 and 1 with shapes `[batch.., m, k]` and
/// `[batch.., k, n]`: transposed views arrive as strides, never as copies.
/// The epilogue may load further args (bias, residual) over `[batch.., m, n]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatmulBody {
    pub batch: Vec<usize>,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Layout,
    pub b: Layout,
    /// Dtype products are accumulated in (f32 for f16/bf16/f32, f64, i32).
    pub acc_dtype: DType,
    pub epilogue: Expr,
    pub out: ExprId,
}

impl MatmulBody {
    pub fn out_shape(&self) -> Vec<usize> {
        let mut s = self.batch.clone();
        s.extend([self.m, self.n]);
        s
    }
}

/// Concatenation along `axis`; arg `i` is read through `parts[i]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcatBody {
    pub shape: Vec<usize>,
    pub axis: usize,
    pub parts: Vec<Layout>,
}

/// `index_select` (idx is 1-D) or `gather` (idx has the output's shape).
/// Arg 0 is the source read through `src`, arg 1 the indices through `idx`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexBody {
    pub shape: Vec<usize>,
    pub axis: usize,
    pub src: Layout,
    pub idx: Layout,
    pub gather: bool,
}

/// A native convolution product (see [`ConvPass`]): args 0 and 1 are the
/// pass's two inputs, read contiguously through `a` and `b` (offsets
/// allowed). `x` is the activation `[n, h, w, c]`, `w` the weight
/// `[o, kh, kw, c]` and `y` the output activation `[n, oh, ow, o]`,
/// whichever of them the pass reads or writes.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvBody {
    pub pass: ConvPass,
    pub geometry: ConvGeometry,
    pub x: [usize; 4],
    pub w: [usize; 4],
    pub y: [usize; 4],
    pub a: Layout,
    pub b: Layout,
}

impl ConvBody {
    /// Multiply-adds of the product, times two (the same for all passes).
    pub fn flops(&self) -> u64 {
        let [n, oh, ow, o] = self.y;
        let [_, kh, kw, c] = self.w;
        2 * (n * oh * ow * o) as u64 * (kh * kw * c) as u64
    }
}

/// What a kernel computes.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Map(MapBody),
    Reduce(ReduceBody),
    Matmul(MatmulBody),
    Concat(ConcatBody),
    Index(IndexBody),
    Conv(ConvBody),
}

/// One argument buffer of a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArgInfo {
    pub dtype: DType,
    /// Length of the storage, in elements (accesses stay inside it).
    pub len: usize,
}

/// One launch: a body, its arguments and its output.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub body: Body,
    pub args: Vec<ArgInfo>,
    pub out_dtype: DType,
    /// Logical output shape (the output buffer is contiguous over it).
    pub out_shape: Vec<usize>,
}

impl Kernel {
    pub fn out_numel(&self) -> usize {
        self.out_shape.iter().product()
    }

    /// A short name for traces and generated function names.
    pub fn kind(&self) -> &'static str {
        match &self.body {
            Body::Map(_) => "map",
            Body::Reduce(r) if r.out_full => "rowwise",
            Body::Reduce(_) => "reduce",
            Body::Matmul(_) => "matmul",
            Body::Concat(_) => "concat",
            Body::Index(i) if i.gather => "gather",
            Body::Index(_) => "index_select",
            Body::Conv(c) => c.pass.name(),
        }
    }

    /// Floating-point (or integer) operations one launch performs.
    pub fn flops(&self) -> u64 {
        match &self.body {
            Body::Map(m) => m.expr.flops(&[m.out]) * m.shape.iter().product::<usize>() as u64,
            Body::Reduce(r) => {
                let n: u64 = r.shape.iter().product::<usize>() as u64;
                let stage_roots: Vec<ExprId> = r.stages.iter().map(|s| s.value).collect();
                let per_elem = r.expr.flops(&stage_roots) + r.stages.len() as u64;
                let out_n = if r.out_full {
                    n
                } else {
                    n / r.row_len().max(1) as u64
                };
                per_elem * n + r.expr.flops(&[r.out]) * out_n
            }
            Body::Matmul(mm) => {
                let b: u64 = mm.batch.iter().product::<usize>() as u64;
                let out = b * (mm.m * mm.n) as u64;
                2 * out * mm.k as u64 + mm.epilogue.flops(&[mm.out]) * out
            }
            Body::Concat(_) | Body::Index(_) => 0,
            Body::Conv(c) => c.flops(),
        }
    }

    /// Bytes moved to and from memory, counting each input element the
    /// kernel must read once (broadcast reads are counted once) plus the output.
    pub fn bytes(&self) -> u64 {
        let out = (self.out_numel() * self.out_dtype.size_in_bytes()) as u64;
        let read = |arg: usize, l: &Layout| -> u64 {
            let touched: usize = l
                .shape
                .iter()
                .zip(&l.strides)
                .map(|(&d, &s)| if s == 0 { 1 } else { d })
                .product();
            (touched.min(self.args[arg].len) * self.args[arg].dtype.size_in_bytes()) as u64
        };
        let loads = |e: &Expr| -> u64 {
            let mut seen: Vec<(usize, &Layout)> = Vec::new();
            for n in &e.nodes {
                if let ExprNode::Load { arg, access } = n {
                    if !seen.iter().any(|(a, l)| a == arg && *l == access) {
                        seen.push((*arg, access));
                    }
                }
            }
            seen.iter().map(|(a, l)| read(*a, l)).sum()
        };
        out + match &self.body {
            Body::Map(m) => loads(&m.expr),
            Body::Reduce(r) => loads(&r.expr),
            Body::Matmul(mm) => read(0, &mm.a) + read(1, &mm.b) + loads(&mm.epilogue),
            Body::Concat(c) => c.parts.iter().enumerate().map(|(i, l)| read(i, l)).sum(),
            Body::Index(ix) => out + read(1, &ix.idx),
            Body::Conv(c) => read(0, &c.a) + read(1, &c.b),
        }
    }
}
