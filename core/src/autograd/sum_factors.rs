//! Sums over broadcast axes with the factors that are constant along those
//! axes taken out: `Σ (a · s) = s · Σ a` when `s` is broadcast along the
//! summed axes. Batch norm's backward asks for `Σ g·x̂`, `Σ g·γ·(x - μ)`
//! and `Σ g·γ·r` over N, H and W (with `x̂ = (x - μ)·r`, `γ` and `r` per
//! channel); taken out they are `r · Σ g·(x - μ)`, `γ · Σ g·(x - μ)` and
//! `γ·r · Σ g`, so the graph's common-subexpression pass computes two
//! reductions per layer where there were four, as a hand-written batch
//! norm backward does.

use std::sync::Arc;

use crate::error::Result;
use crate::graph::node::{Node, State};
use crate::graph::op::{BinaryOp, Op, UnaryOp};
use crate::tensor::Tensor;

/// At most this many factors are collected (a bound on the walk).
const MAX_FACTORS: usize = 16;

/// The factors of a product tree of `Mul` (and `Neg`) nodes of one shape
/// and dtype, and whether an odd number of negations was passed.
fn collect(node: &Arc<Node>, dtype: crate::DType, out: &mut Vec<Arc<Node>>, negate: &mut bool) {
    if out.len() >= MAX_FACTORS {
        out.push(node.clone());
        return;
    }
    if let State::Lazy { op, inputs } = node.state() {
        let same = |n: &Arc<Node>| n.dtype == dtype && n.shape() == node.shape();
        match op {
            Op::Binary(BinaryOp::Mul) if inputs.iter().all(same) => {
                collect(&inputs[0], dtype, out, negate);
                collect(&inputs[1], dtype, out, negate);
                return;
            }
            Op::Unary(UnaryOp::Neg) if same(&inputs[0]) => {
                *negate = !*negate;
                collect(&inputs[0], dtype, out, negate);
                return;
            }
            _ => {}
        }
    }
    out.push(node.clone());
}

/// `Σ_axes g` (axes kept as size 1) with the factors of `g` that are
/// broadcast along all of `axes` multiplied in after the sum, or `None`
/// when `g` has no such factor (or nothing but such factors).
pub(super) fn factored_sum(g: &Tensor, axes: &[isize]) -> Result<Option<Tensor>> {
    let mut factors = Vec::new();
    let mut negate = false;
    collect(g.node(), g.dtype(), &mut factors, &mut negate);
    let constant = |n: &Arc<Node>| {
        axes.iter()
            .all(|&a| n.layout.strides.get(a as usize).is_some_and(|&s| s == 0))
    };
    let (mut outer, mut inner): (Vec<_>, Vec<_>) = factors.into_iter().partition(constant);
    if outer.is_empty() || inner.is_empty() {
        return Ok(None);
    }
    // One order for every caller, so equal products are equal nodes for CSE.
    inner.sort_by_key(|n| n.id);
    outer.sort_by_key(|n| n.id);
    let device = *g.device();
    let tensor = |n: &Arc<Node>| Tensor {
        node: n.clone(),
        device,
    };
    let mut product = tensor(&inner[0]);
    for n in &inner[1..] {
        product = product.mul(&tensor(n))?;
    }
    let mut sum = product.sum(axes, true)?;
    for n in &outer {
        // The factor's values at position 0 of the summed (broadcast) axes.
        let mut f = tensor(n);
        for &a in axes {
            f = f.narrow(a, 0, 1)?;
        }
        sum = sum.mul(&f)?;
    }
    if negate {
        sum = sum.neg()?;
    }
    Ok(Some(sum))
}
