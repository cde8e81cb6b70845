//! The vector-Jacobian product of every op, written with ordinary tensor
//! ops on the forward nodes, so the backward graph fuses like any other.

use super::views;
use crate::error::{Error, Result};
use crate::graph::op::{BinaryOp, Op, ReduceOp, UnaryOp, ViewOp};
use crate::tensor::Tensor;

/// Gradients for the inputs of `node` (computed by `op` from `ins`) given
/// the gradient `g` of `node`. `None` where an input gets no gradient or
/// `wanted` says it is not needed.
pub(super) fn of_op(
    op: &Op,
    node: &Tensor,
    ins: &[Tensor],
    g: &Tensor,
    wanted: &[bool],
) -> Result<Vec<Option<Tensor>>> {
    let want = |i: usize| wanted.get(i).copied().unwrap_or(false);
    Ok(match op {
        Op::Full(_) | Op::Arange { .. } | Op::Rand { .. } => vec![],
        Op::View(ViewOp::Detach) => vec![None],
        Op::View(v) => vec![Some(views::vjp(v, node, &ins[0], g)?)],
        Op::Contiguous | Op::Cast(_) => vec![Some(g.clone())],
        Op::Unary(u) => vec![unary(*u, &ins[0], node, g)?],
        Op::Binary(b) => binary(*b, &ins[0], &ins[1], node, g, [want(0), want(1)])?,
        Op::Where => {
            let zero = zero_like(g)?;
            vec![
                None,
                want(1)
                    .then(|| Tensor::where_cond(&ins[0], g, &zero))
                    .transpose()?,
                want(2)
                    .then(|| Tensor::where_cond(&ins[0], &zero, g))
                    .transpose()?,
            ]
        }
        Op::Reduce { op, axes } => vec![reduce(*op, axes, &ins[0], node, g)?],
        Op::Matmul => {
            let (a, b) = (&ins[0], &ins[1]);
            vec![
                want(0).then(|| g.matmul(&b.t()?)).transpose()?,
                want(1).then(|| a.t()?.matmul(g)).transpose()?,
            ]
        }
        Op::Concat { axis } => {
            let mut start = 0;
            let mut out = Vec::with_capacity(ins.len());
            for x in ins {
                let len = x.shape()[*axis];
                out.push(Some(g.narrow(*axis as isize, start, len)?));
                start += len;
            }
            out
        }
        Op::IndexSelect { axis } => vec![Some(index_select(*axis, &ins[0], &ins[1], g)?)],
        Op::Gather { axis } => vec![Some(gather(*axis, &ins[0], &ins[1], g)?)],
        Op::Conv2d { pass, geometry } => {
            crate::nn::conv_native::vjp(*pass, *geometry, ins, g, [want(0), want(1)])?
        }
    })
}

/// A zero of `t`'s dtype (rank 0: it broadcasts into any shape).
fn zero_like(t: &Tensor) -> Result<Tensor> {
    Tensor::scalar(0.0, t.dtype(), t.device())
}

fn unary(op: UnaryOp, x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    let zero = zero_like(g)?;
    Ok(Some(match op {
        UnaryOp::Neg => g.neg()?,
        UnaryOp::Abs => Tensor::where_cond(
            &x.gt_scalar(0.0)?,
            g,
            &Tensor::where_cond(&x.lt_scalar(0.0)?, &g.neg()?, &zero)?,
        )?,
        UnaryOp::Exp => g.mul(y)?,
        UnaryOp::Log => g.div(x)?,
        UnaryOp::Sqrt => g.mul_scalar(0.5)?.div(y)?,
        // d/dx x^-1/2 = -1/2 · y³
        UnaryOp::Rsqrt => g.mul(&y.mul(y)?.mul(y)?)?.mul_scalar(-0.5)?,
        UnaryOp::Sin => g.mul(&x.cos()?)?,
        UnaryOp::Cos => g.mul(&x.sin()?)?.neg()?,
        UnaryOp::Tanh => g.mul(&y.mul(y)?.neg()?.add_scalar(1.0)?)?,
        UnaryOp::Sigmoid => g.mul(&y.mul(&y.neg()?.add_scalar(1.0)?)?)?,
        // The derivative at 0 is taken as 0, as PyTorch does.
        UnaryOp::Relu => Tensor::where_cond(&x.gt_scalar(0.0)?, g, &zero)?,
        UnaryOp::GeluErf => {
            // Φ(x) + x·φ(x). There is no erf op, but Φ(x) = gelu(x)/x for
            // x ≠ 0 (both rounded once, so within a few ulp) and 1/2 at 0.
            let cdf = Tensor::where_cond(
                &x.eq_scalar(0.0)?,
                &Tensor::scalar(0.5, x.dtype(), x.device())?,
                &y.div(x)?,
            )?;
            let pdf = x
                .mul(x)?
                .mul_scalar(-0.5)?
                .exp()?
                .mul_scalar(1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
            g.mul(&cdf.add(&x.mul(&pdf)?)?)?
        }
        UnaryOp::GeluTanh => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            let x2 = x.mul(x)?;
            let t = x
                .add(&x2.mul(x)?.mul_scalar(0.044715)?)?
                .mul_scalar(c)?
                .tanh()?;
            let dt = t.mul(&t)?.neg()?.add_scalar(1.0)?;
            let inner = x2
                .mul_scalar(3.0 * 0.044715)?
                .add_scalar(1.0)?
                .mul_scalar(c)?;
            let d = t
                .add_scalar(1.0)?
                .mul_scalar(0.5)?
                .add(&x.mul(&dt)?.mul(&inner)?.mul_scalar(0.5)?)?;
            g.mul(&d)?
        }
        UnaryOp::Silu => {
            let s = x.sigmoid()?;
            let d = s.mul(&x.mul(&s.neg()?.add_scalar(1.0)?)?.add_scalar(1.0)?)?;
            g.mul(&d)?
        }
        UnaryOp::Not => return Ok(None),
    }))
}

fn binary(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    y: &Tensor,
    g: &Tensor,
    want: [bool; 2],
) -> Result<Vec<Option<Tensor>>> {
    let zero = zero_like(g)?;
    let half = || g.mul_scalar(0.5);
    let pick = |w: bool, f: &dyn Fn() -> Result<Tensor>| -> Result<Option<Tensor>> {
        if w {
            f().map(Some)
        } else {
            Ok(None)
        }
    };
    Ok(match op {
        BinaryOp::Add => vec![Some(g.clone()), Some(g.clone())],
        BinaryOp::Sub => vec![Some(g.clone()), pick(want[1], &|| g.neg())?],
        BinaryOp::Mul => vec![pick(want[0], &|| g.mul(b))?, pick(want[1], &|| g.mul(a))?],
        BinaryOp::Div => vec![
            pick(want[0], &|| g.div(b))?,
            pick(want[1], &|| g.mul(y)?.div(b)?.neg())?,
        ],
        BinaryOp::Pow => vec![
            pick(want[0], &|| g.mul(b)?.mul(&a.pow(&b.sub_scalar(1.0)?)?))?,
            // y·ln(a), taken as 0 where a = 0 (as PyTorch does).
            pick(want[1], &|| {
                Tensor::where_cond(&a.eq_scalar(0.0)?, &zero, &g.mul(y)?.mul(&a.log()?)?)
            })?,
        ],
        // Ties split the gradient evenly, as PyTorch's maximum/minimum do.
        BinaryOp::Maximum | BinaryOp::Minimum => {
            let (wins_a, wins_b) = if op == BinaryOp::Maximum {
                (a.gt(b)?, a.lt(b)?)
            } else {
                (a.lt(b)?, a.gt(b)?)
            };
            let tie = a.eq(b)?;
            let share = |wins: &Tensor| -> Result<Tensor> {
                Tensor::where_cond(wins, g, &Tensor::where_cond(&tie, &half()?, &zero)?)
            };
            vec![
                pick(want[0], &|| share(&wins_a))?,
                pick(want[1], &|| share(&wins_b))?,
            ]
        }
        // Comparisons and logical ops are piecewise constant.
        _ => vec![None, None],
    })
}

fn reduce(
    op: ReduceOp,
    axes: &[usize],
    x: &Tensor,
    y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    Ok(match op {
        ReduceOp::Sum => Some(g.expand(x.shape().to_vec())?),
        // Ties share the gradient evenly, as PyTorch's amax/amin do.
        ReduceOp::Max | ReduceOp::Min => {
            let hit = x.eq(&y.expand(x.shape().to_vec())?)?.cast(x.dtype())?;
            let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            // At least 1: a fused kernel may recompute `x` with a rounding
            // different from the one the max was taken over, so a row can
            // find no equal element. Its gradient is then dropped instead of
            // becoming 0/0 (for softmax and log-softmax, whose output does
            // not depend on the shift, that gradient is exactly zero anyway).
            let count = hit.sum(&axes, true)?.maximum_scalar(1.0)?;
            Some(hit.mul(&g.div(&count)?)?)
        }
        ReduceOp::ArgMax => None,
    })
}

/// `∂/∂x` of `x.index_select(axis, idx)`: the gradient rows that picked
/// entry `k` summed into row `k`. Indices are data, so this is a product
/// with the one-hot matrix `[k == idx[j]]` (fused into the matmul's operand
/// load), which needs no scatter op.
fn index_select(axis: usize, x: &Tensor, idx: &Tensor, g: &Tensor) -> Result<Tensor> {
    let size = x.shape()[axis];
    let onehot = one_hot(idx, size, x.dtype())?; // [picks, size]
                                                 // Move `axis` last in g: [..., picks] @ [picks, size] -> [..., size].
    let rank = g.rank();
    let mut order: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    order.push(axis);
    let gt = g.permute(&order)?;
    let moved = gt.matmul(&onehot)?;
    let mut back = vec![0; rank];
    for (i, &a) in order.iter().enumerate() {
        back[a] = i;
    }
    moved.permute(&back)
}

/// `∂/∂x` of `x.gather(axis, idx)`: for each position, the gradients whose
/// index pointed at it, summed (as a masked sum over a one-hot axis), then
/// zero-padded to `x`'s shape on the axes where `idx` is shorter.
fn gather(axis: usize, x: &Tensor, idx: &Tensor, g: &Tensor) -> Result<Tensor> {
    let size = x.shape()[axis];
    let rank = x.rank();
    // [..., j, ...] -> [..., j, ..., 1] == arange(size) -> [..., j, ..., size]
    let ks = Tensor::arange(0.0, size as f64, 1.0, crate::DType::I32, x.device())?;
    let hit = idx.cast(crate::DType::I32)?.unsqueeze(-1)?.eq(&ks)?;
    let zero = zero_like(g)?;
    let spread = Tensor::where_cond(&hit, &g.unsqueeze(-1)?, &zero)?;
    let summed = spread.sum(&[axis as isize], false)?; // [..., (no axis), ..., size]
                                                       // Put the size axis back at `axis`.
    let mut order: Vec<usize> = (0..rank - 1).collect();
    order.insert(axis, rank - 1);
    let mut out = summed.permute(&order)?;
    for a in 0..rank {
        let (have, want) = (out.shape()[a], x.shape()[a]);
        if have < want {
            let mut pad = out.shape().to_vec();
            pad[a] = want - have;
            let z = Tensor::zeros(pad, out.dtype(), out.device())?;
            out = Tensor::concat(&[&out, &z], a as isize)?;
        } else if have > want {
            return Err(Error::GatherShape {
                op: "gather backward",
                index: idx.shape().to_vec(),
                source_shape: x.shape().to_vec(),
                axis,
            });
        }
    }
    Ok(out)
}

/// `[picks, size]` with ones where `k == idx[j]`, in `dtype`.
pub(crate) fn one_hot(idx: &Tensor, size: usize, dtype: crate::DType) -> Result<Tensor> {
    let ks = Tensor::arange(0.0, size as f64, 1.0, crate::DType::I32, idx.device())?;
    idx.cast(crate::DType::I32)?
        .unsqueeze(-1)?
        .eq(&ks)?
        .cast(dtype)
}
