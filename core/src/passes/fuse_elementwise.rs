//! Elementwise fusion: a map kernel is inlined into the kernels that read
//! it (maps, reductions, matmul epilogues), reading its inputs through the
//! composed access. A producer with several readers is inlined only when
//! every reader can take it, so its buffer disappears instead of being
//! written and recomputed, and only when recomputing it in each reader
//! moves no more bytes than storing it once (see [`cheaper_inlined`]).

use crate::graph::dag::{GOp, Graph};
use crate::passes::builder::{is_identity, set_kernel, uses_position, Builder, LoadRewrite};
use crate::passes::compose::compose;
use crate::passes::Limits;
use crate::schedule::kernel::{Body, Expr, ExprId, Kernel, MapBody, MatmulBody, ReduceBody};

pub fn fuse_elementwise(g: &mut Graph, limits: &Limits) -> bool {
    let mut changed = false;
    for p in 0..g.nodes.len() {
        let Some(pk) = g.nodes[p].kernel().cloned() else {
            continue;
        };
        let Body::Map(pm) = &pk.body else { continue };
        if g.is_output(p) {
            continue;
        }
        let users = g.users(p);
        if users.is_empty() {
            continue;
        }
        let plans: Option<Vec<(usize, Builder, Body)>> = users
            .iter()
            .map(|&u| inline_into(g, p, pm, u).map(|(b, body)| (u, b, body)))
            .collect();
        let Some(plans) = plans else { continue };
        if plans
            .iter()
            .any(|(_, b, _)| b.args.len() > limits.max_kernel_args)
        {
            continue;
        }
        let Some(plans) = cheaper_inlined(g, &pk, plans) else {
            continue;
        };
        for (u, b, body) in plans {
            let (dt, shape) = {
                let k = g.nodes[u]
                    .kernel()
                    .map(|k| (k.out_dtype, k.out_shape.clone()));
                match k {
                    Some(x) => x,
                    None => continue,
                }
            };
            set_kernel(g, u, body, b.args, dt, shape);
        }
        g.nodes[p].op = GOp::Dead;
        g.nodes[p].inputs.clear();
        changed = true;
    }
    changed
}

/// `plans` when inlining the producer `pk` into all its users moves no
/// more bytes than storing it once and letting each user read it, else
/// `None`. A producer read by one kernel is always inlined (it saves a
/// write and a read); one read by several is recomputed in each, which
/// re-reads its inputs there: a forward activation such as
/// `relu(bn(conv) + residual)` that the next convolution, the batch-norm
/// gradients and the residual branch all read is cheaper stored than
/// rebuilt from two or three tensors in every one of them.
fn cheaper_inlined(
    g: &Graph,
    pk: &Kernel,
    plans: Vec<(usize, Builder, Body)>,
) -> Option<Vec<(usize, Builder, Body)>> {
    if plans.len() < 2 {
        return Some(plans);
    }
    let mut kept = pk.bytes();
    let mut fused = 0u64;
    let mut out = Vec::with_capacity(plans.len());
    for (u, b, body) in plans {
        let uk = g.nodes[u].kernel()?;
        kept += uk.bytes();
        let candidate = Kernel {
            body,
            args: b.arg_infos(g),
            out_dtype: uk.out_dtype,
            out_shape: uk.out_shape.clone(),
        };
        fused += candidate.bytes();
        out.push((u, b, candidate.body));
    }
    (fused <= kept).then_some(out)
}

/// The body of user `u` with producer map `p` inlined, or `None`.
fn inline_into(g: &Graph, p: usize, pm: &MapBody, u: usize) -> Option<(Builder, Body)> {
    let uk: &Kernel = g.nodes[u].kernel()?;
    let u_args = g.nodes[u].inputs.clone();
    let p_args = g.nodes[p].inputs.clone();
    let positional = uses_position(&pm.expr);
    let mut b = Builder::default();
    let (expr, roots): (&Expr, Vec<ExprId>) = match &uk.body {
        Body::Map(m) => (&m.expr, vec![m.out]),
        Body::Reduce(r) => (
            &r.expr,
            r.stages.iter().map(|s| s.value).chain([r.out]).collect(),
        ),
        Body::Matmul(mm) => {
            if u_args[0] == p || u_args[1] == p {
                return None;
            }
            b.args = vec![u_args[0], u_args[1]];
            (&mm.epilogue, vec![mm.out])
        }
        Body::Concat(_) | Body::Index(_) | Body::Conv(_) => return None,
    };
    let new_roots =
        import_with_producer(&mut b, expr, &u_args, &roots, p, pm, &p_args, positional)?;
    let body = match &uk.body {
        Body::Map(m) => Body::Map(MapBody {
            shape: m.shape.clone(),
            expr: b.expr.clone(),
            out: new_roots[0],
        }),
        Body::Reduce(r) => {
            let mut r2: ReduceBody = r.clone();
            r2.expr = b.expr.clone();
            for (s, &id) in r2.stages.iter_mut().zip(&new_roots) {
                s.value = id;
            }
            r2.out = new_roots[r.stages.len()];
            Body::Reduce(r2)
        }
        Body::Matmul(mm) => {
            let mut m2: MatmulBody = mm.clone();
            m2.epilogue = b.expr.clone();
            m2.out = new_roots[0];
            Body::Matmul(m2)
        }
        _ => return None,
    };
    Some((b, body))
}

/// Imports `expr` into `b`, replacing each load of producer `p` by the
/// producer's expression read through the composed access.
#[allow(clippy::too_many_arguments)]
fn import_with_producer(
    b: &mut Builder,
    expr: &Expr,
    u_args: &[usize],
    roots: &[ExprId],
    p: usize,
    pm: &MapBody,
    p_args: &[usize],
    positional: bool,
) -> Option<Vec<ExprId>> {
    // First pass: for every distinct access of `p`, import the producer.
    let mut replaced: Vec<(crate::layout::Layout, ExprId)> = Vec::new();
    for n in &expr.nodes {
        if let crate::schedule::kernel::ExprNode::Load { arg, access } = n {
            if u_args[*arg] != p || replaced.iter().any(|(l, _)| l == access) {
                continue;
            }
            if positional && !is_identity(access, &pm.shape) {
                return None;
            }
            let outer = access.clone();
            let mut rw = |q: usize, pa: &crate::layout::Layout| match compose(&outer, pa) {
                Some(c) => LoadRewrite::Keep { node: q, access: c },
                None => LoadRewrite::Fail,
            };
            let ids = b.import(&pm.expr, p_args, &[pm.out], 0, &mut rw)?;
            replaced.push((access.clone(), ids[0]));
        }
    }
    let mut rw = |node: usize, access: &crate::layout::Layout| {
        if node == p {
            match replaced.iter().find(|(l, _)| l == access) {
                Some((_, id)) => LoadRewrite::With(*id),
                None => LoadRewrite::Fail,
            }
        } else {
            LoadRewrite::Keep {
                node,
                access: access.clone(),
            }
        }
    };
    b.import(expr, u_args, roots, 0, &mut rw)
}
