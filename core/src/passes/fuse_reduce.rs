//! Reduction fusion. A reduce kernel absorbs:
//! - a map that reads its per-row result (mean = sum * 1/n, rsqrt(var + eps)),
//! - a full-size map that reads the result broadcast back over the rows
//!   (x - max, x / sum): the kernel then writes full rows (softmax, layer norm),
//! - an earlier reduction over the same rows whose result it reads broadcast
//!   (softmax's max before the sum, the mean before the variance): the two
//!   become stages of one kernel.
//!
//! Producer maps were already inlined by `fuse_elementwise`, so softmax,
//! log-softmax, layer norm and var each end as one kernel.

use crate::graph::dag::Graph;
use crate::layout::Layout;
use crate::passes::builder::{is_identity, set_kernel, Builder, LoadRewrite};
use crate::passes::Limits;
use crate::schedule::kernel::{Body, ExprId, ExprNode, MapBody, ReduceBody, Stage};
use crate::shape::contiguous_strides;

/// Stages one row kernel may hold. Each stage re-evaluates the expression
/// of the stages before it per element, so deep stacks (softmax of softmax
/// of ...) would cost quadratic work; past this they stay separate kernels.
const MAX_STAGES: usize = 8;

pub fn fuse_reduce(g: &mut Graph, limits: &Limits) -> bool {
    let mut changed = false;
    for r in 0..g.nodes.len() {
        let Some(rk) = g.nodes[r].kernel().cloned() else {
            continue;
        };
        let Body::Reduce(rb) = &rk.body else { continue };
        if g.is_output(r) {
            continue;
        }
        let users = g.users(r);
        let [u] = users[..] else { continue };
        let Some(uk) = g.nodes[u].kernel().cloned() else {
            continue;
        };
        let plan = match &uk.body {
            Body::Map(um) => absorb_map(g, r, rb, u, um),
            Body::Reduce(ub) => absorb_reduce(g, r, rb, u, ub),
            _ => None,
        };
        let Some((b, body)) = plan else { continue };
        if b.args.len() > limits.max_kernel_args {
            continue;
        }
        set_kernel(g, u, body, b.args, uk.out_dtype, uk.out_shape.clone());
        g.eliminate_dead();
        changed = true;
    }
    changed
}

/// True if `access` reads a reduce result (contiguous over the kept shape)
/// broadcast back over the full domain.
fn is_expand_back(access: &Layout, rb: &ReduceBody) -> bool {
    let keep = rb.keepdim_shape();
    let cs = contiguous_strides(&keep);
    access.shape == rb.shape
        && access.offset == 0
        && (0..rb.shape.len()).all(|a| {
            rb.shape[a] == 1
                || if rb.axes.contains(&a) {
                    access.strides[a] == 0
                } else {
                    access.strides[a] == cs[a]
                }
        })
}

/// Every load of node `r` in `e` satisfies `ok`.
fn all_loads(
    e: &crate::schedule::kernel::Expr,
    args: &[usize],
    r: usize,
    ok: impl Fn(&Layout) -> bool,
) -> bool {
    e.nodes.iter().all(|n| match n {
        ExprNode::Load { arg, access } if args[*arg] == r => ok(access),
        _ => true,
    })
}

/// Imports the reduce body into a fresh builder: returns the builder, the
/// stage value ids and the output id.
fn import_reduce(
    g: &Graph,
    r: usize,
    rb: &ReduceBody,
    b: &mut Builder,
    shift: usize,
) -> Option<(Vec<ExprId>, ExprId)> {
    let args = g.nodes[r].inputs.clone();
    let roots: Vec<ExprId> = rb.stages.iter().map(|s| s.value).chain([rb.out]).collect();
    let mut keep = |node: usize, access: &Layout| LoadRewrite::Keep {
        node,
        access: access.clone(),
    };
    let ids = b.import(&rb.expr, &args, &roots, shift, &mut keep)?;
    let out = *ids.last()?;
    Some((ids[..rb.stages.len()].to_vec(), out))
}

fn absorb_map(
    g: &Graph,
    r: usize,
    rb: &ReduceBody,
    u: usize,
    um: &MapBody,
) -> Option<(Builder, Body)> {
    let u_args = g.nodes[u].inputs.clone();
    let outer_numel: usize = rb.keepdim_shape().iter().product();
    let um_numel: usize = um.shape.iter().product();
    enum Mode {
        Outer,
        Full,
    }
    let mode = if !rb.out_full
        && um_numel == outer_numel
        && all_loads(&um.expr, &u_args, r, |l| is_identity(l, &um.shape))
    {
        Mode::Outer
    } else if um.shape == rb.shape
        && ((!rb.out_full && all_loads(&um.expr, &u_args, r, |l| is_expand_back(l, rb)))
            || (rb.out_full && all_loads(&um.expr, &u_args, r, |l| is_identity(l, &um.shape))))
    {
        Mode::Full
    } else {
        return None;
    };
    let mut b = Builder::default();
    let (stage_ids, r_out) = import_reduce(g, r, rb, &mut b, 0)?;
    let keep = rb.keepdim_shape();
    let domain = rb.shape.clone();
    let mut rw = |node: usize, access: &Layout| {
        if node == r {
            return LoadRewrite::With(r_out);
        }
        match mode {
            Mode::Full => LoadRewrite::Keep {
                node,
                access: access.clone(),
            },
            // A per-row map's other inputs are read once per row: view them
            // over the kept shape, then broadcast along the reduced axes.
            Mode::Outer => match access
                .reshape_view(&keep)
                .and_then(|l| l.expand(&domain).ok())
            {
                Some(l) => LoadRewrite::Keep { node, access: l },
                None => LoadRewrite::Fail,
            },
        }
    };
    if matches!(mode, Mode::Outer)
        && um
            .expr
            .nodes
            .iter()
            .any(|n| matches!(n, ExprNode::Coord(_) | ExprNode::Rand { .. }))
    {
        return None;
    }
    let out = b.import(&um.expr, &u_args, &[um.out], 0, &mut rw)?[0];
    let stages = rb
        .stages
        .iter()
        .zip(stage_ids)
        .map(|(s, v)| Stage { op: s.op, value: v })
        .collect();
    let out_full = matches!(mode, Mode::Full);
    let body = Body::Reduce(ReduceBody {
        shape: rb.shape.clone(),
        axes: rb.axes.clone(),
        expr: b.expr.clone(),
        stages,
        out,
        out_full,
    });
    Some((b, body))
}

fn absorb_reduce(
    g: &Graph,
    r: usize,
    rb: &ReduceBody,
    u: usize,
    ub: &ReduceBody,
) -> Option<(Builder, Body)> {
    if rb.stages.len() + ub.stages.len() > MAX_STAGES {
        return None;
    }
    if rb.out_full || rb.shape != ub.shape || rb.axes != ub.axes {
        return None;
    }
    let u_args = g.nodes[u].inputs.clone();
    if !all_loads(&ub.expr, &u_args, r, |l| is_expand_back(l, rb)) {
        return None;
    }
    let mut b = Builder::default();
    let (first_ids, r_out) = import_reduce(g, r, rb, &mut b, 0)?;
    let roots: Vec<ExprId> = ub.stages.iter().map(|s| s.value).chain([ub.out]).collect();
    let mut rw = |node: usize, access: &Layout| {
        if node == r {
            LoadRewrite::With(r_out)
        } else {
            LoadRewrite::Keep {
                node,
                access: access.clone(),
            }
        }
    };
    let ids = b.import(&ub.expr, &u_args, &roots, rb.stages.len(), &mut rw)?;
    let mut stages: Vec<Stage> = rb
        .stages
        .iter()
        .zip(first_ids)
        .map(|(s, v)| Stage { op: s.op, value: v })
        .collect();
    stages.extend(
        ub.stages
            .iter()
            .zip(&ids)
            .map(|(s, &v)| Stage { op: s.op, value: v }),
    );
    let out = *ids.last()?;
    let body = Body::Reduce(ReduceBody {
        shape: ub.shape.clone(),
        axes: ub.axes.clone(),
        expr: b.expr.clone(),
        stages,
        out,
        out_full: ub.out_full,
    });
    Some((b, body))
}
