//! Helpers for building and merging kernels: argument lists, expression
//! import with load rewriting, and the access a kernel uses for an input node.

use std::sync::Arc;

use crate::dtype::DType;
use crate::graph::dag::{GNode, GOp, Graph};
use crate::layout::Layout;
use crate::schedule::kernel::{ArgInfo, Body, Expr, ExprId, ExprNode, Kernel};

/// How a kernel reads graph node `input`: the storage-root node to bind as an
/// argument and the layout over that root's storage.
pub fn operand(g: &Graph, input: usize) -> (usize, Layout) {
    let n = &g.nodes[input];
    if n.is_view() || matches!(n.op, GOp::Input(_)) {
        (g.root_of(input), n.layout.clone())
    } else {
        (input, Layout::contiguous(n.shape()))
    }
}

/// An argument list plus an expression under construction.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    /// Graph node of each argument.
    pub args: Vec<usize>,
    pub expr: Expr,
}

/// What to do with a load while importing an expression.
pub enum LoadRewrite {
    /// Replace the load by this node of the destination expression.
    With(ExprId),
    /// Keep it, reading graph node `node` through `access`.
    Keep { node: usize, access: Layout },
    /// The import is impossible.
    Fail,
}

impl Builder {
    /// The argument slot of graph node `node` (added if new).
    pub fn arg(&mut self, node: usize) -> usize {
        if let Some(i) = self.args.iter().position(|&a| a == node) {
            return i;
        }
        self.args.push(node);
        self.args.len() - 1
    }

    /// Adds a load of graph node `input` (through its view) over the domain.
    pub fn load(&mut self, g: &Graph, input: usize) -> ExprId {
        let (root, access) = operand(g, input);
        let arg = self.arg(root);
        self.expr
            .push(ExprNode::Load { arg, access }, g.nodes[input].dtype)
    }

    /// Copies the nodes of `src` reachable from `roots` into this builder.
    /// `src_args` maps `src`'s argument slots to graph nodes; `rewrite`
    /// decides for every load; `stage_shift` is added to stage references.
    /// Returns the new ids of `roots`, or `None` when a load cannot be rewritten.
    pub fn import(
        &mut self,
        src: &Expr,
        src_args: &[usize],
        roots: &[ExprId],
        stage_shift: usize,
        rewrite: &mut dyn FnMut(usize, &Layout) -> LoadRewrite,
    ) -> Option<Vec<ExprId>> {
        let live = src.reachable(roots);
        let mut map = vec![usize::MAX; src.len()];
        for i in live {
            let d = src.dtypes[i];
            let m = |x: usize| map[x];
            let node = match &src.nodes[i] {
                ExprNode::Load { arg, access } => match rewrite(src_args[*arg], access) {
                    LoadRewrite::With(id) => {
                        map[i] = id;
                        continue;
                    }
                    LoadRewrite::Keep { node, access } => ExprNode::Load {
                        arg: self.arg(node),
                        access,
                    },
                    LoadRewrite::Fail => return None,
                },
                ExprNode::Unary(op, a) => ExprNode::Unary(*op, m(*a)),
                ExprNode::Binary(op, a, b) => ExprNode::Binary(*op, m(*a), m(*b)),
                ExprNode::Where(c, a, b) => ExprNode::Where(m(*c), m(*a), m(*b)),
                ExprNode::Cast(t, a) => ExprNode::Cast(*t, m(*a)),
                ExprNode::StageRef(s) => ExprNode::StageRef(s + stage_shift),
                other => other.clone(),
            };
            map[i] = self.expr.push(node, d);
        }
        Some(roots.iter().map(|&r| map[r]).collect())
    }

    /// Argument descriptions for the kernel.
    pub fn arg_infos(&self, g: &Graph) -> Vec<ArgInfo> {
        self.args.iter().map(|&a| arg_info(&g.nodes[a])).collect()
    }
}

/// Dtype and storage length of a node used as a kernel argument.
pub fn arg_info(n: &GNode) -> ArgInfo {
    ArgInfo {
        dtype: n.dtype,
        len: n.storage_len,
    }
}

/// Stores `kernel` at node `at`, with `args` as its inputs.
pub fn set_kernel(
    g: &mut Graph,
    at: usize,
    body: Body,
    args: Vec<usize>,
    out_dtype: DType,
    out_shape: Vec<usize>,
) {
    let infos = args.iter().map(|&a| arg_info(&g.nodes[a])).collect();
    let kernel = Kernel {
        body,
        args: infos,
        out_dtype,
        out_shape: out_shape.clone(),
    };
    let n = &mut g.nodes[at];
    n.op = GOp::Kernel(Arc::new(kernel));
    n.inputs = args;
    n.dtype = out_dtype;
    n.storage_len = out_shape.iter().product();
    n.layout = Layout::contiguous(&out_shape);
}

/// True if the expression uses the domain position other than through loads
/// (coordinates, random counters): such producers only fuse at identity access.
pub fn uses_position(e: &Expr) -> bool {
    e.nodes
        .iter()
        .any(|n| matches!(n, ExprNode::Coord(_) | ExprNode::Rand { .. }))
}

/// True if `access` reads a contiguous buffer of `shape` in order.
pub fn is_identity(access: &Layout, shape: &[usize]) -> bool {
    access.shape == shape && access.offset == 0 && access.is_contiguous()
}
