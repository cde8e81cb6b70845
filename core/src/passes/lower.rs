//! Lowering: every op node that computes something becomes a one-op kernel.
//! The fusion passes then merge these kernels.

use crate::dtype::{DType, Scalar};
use crate::graph::dag::{GOp, Graph};
use crate::graph::op::Op;
use crate::passes::builder::{operand, set_kernel, Builder};
use crate::schedule::kernel::{
    Body, ConcatBody, ConvBody, ExprNode, IndexBody, MapBody, MatmulBody, ReduceBody, Stage,
};

/// Turns op nodes into kernels. Views and inputs stay as they are.
pub fn lower(g: &mut Graph) -> bool {
    let mut changed = false;
    for i in 0..g.nodes.len() {
        let GOp::Op(op) = g.nodes[i].op.clone() else {
            continue;
        };
        if matches!(op, Op::View(_)) {
            continue;
        }
        lower_node(g, i, &op);
        changed = true;
    }
    changed
}

fn lower_node(g: &mut Graph, i: usize, op: &Op) {
    let n = g.nodes[i].clone();
    let shape = n.shape().to_vec();
    let dtype = n.dtype;
    let mut b = Builder::default();
    let map = |expr, out| {
        Body::Map(MapBody {
            shape: shape.clone(),
            expr,
            out,
        })
    };
    let body = match op {
        Op::Full(s) => {
            let c = b.expr.push(ExprNode::Const(*s), dtype);
            map(std::mem::take(&mut b.expr), c)
        }
        Op::Arange { start, step } => {
            // Computed in f64 only for f64 outputs (WebGPU has no f64):
            // integer ranges in exact i32 arithmetic, other floats in f32.
            let len = shape.first().copied().unwrap_or(0);
            let calc = arange_dtype(dtype, start.value, step.value, len);
            let coord = b.expr.push(ExprNode::Coord(0), DType::I32);
            let c = if calc == DType::I32 {
                coord
            } else {
                b.expr.push(ExprNode::Cast(calc, coord), calc)
            };
            let st = b
                .expr
                .push(ExprNode::Const(Scalar::new(step.value, calc)), calc);
            let s0 = b
                .expr
                .push(ExprNode::Const(Scalar::new(start.value, calc)), calc);
            let m = b.expr.push(
                ExprNode::Binary(crate::graph::op::BinaryOp::Mul, c, st),
                calc,
            );
            let v = b.expr.push(
                ExprNode::Binary(crate::graph::op::BinaryOp::Add, m, s0),
                calc,
            );
            let out = b.expr.push(ExprNode::Cast(dtype, v), dtype);
            map(std::mem::take(&mut b.expr), out)
        }
        Op::Rand { seed, normal } => {
            let r = b.expr.push(
                ExprNode::Rand {
                    seed: *seed,
                    normal: *normal,
                },
                DType::F32,
            );
            let out = if dtype == DType::F32 {
                r
            } else {
                b.expr.push(ExprNode::Cast(dtype, r), dtype)
            };
            map(std::mem::take(&mut b.expr), out)
        }
        Op::Contiguous => {
            let l = b.load(g, n.inputs[0]);
            map(std::mem::take(&mut b.expr), l)
        }
        Op::Unary(u) => {
            let a = b.load(g, n.inputs[0]);
            let out = b.expr.push(ExprNode::Unary(*u, a), dtype);
            map(std::mem::take(&mut b.expr), out)
        }
        Op::Binary(op) => {
            let x = b.load(g, n.inputs[0]);
            let y = b.load(g, n.inputs[1]);
            let out = b.expr.push(ExprNode::Binary(*op, x, y), dtype);
            map(std::mem::take(&mut b.expr), out)
        }
        Op::Where => {
            let c = b.load(g, n.inputs[0]);
            let x = b.load(g, n.inputs[1]);
            let y = b.load(g, n.inputs[2]);
            let out = b.expr.push(ExprNode::Where(c, x, y), dtype);
            map(std::mem::take(&mut b.expr), out)
        }
        Op::Cast(t) => {
            let a = b.load(g, n.inputs[0]);
            let out = b.expr.push(ExprNode::Cast(*t, a), *t);
            map(std::mem::take(&mut b.expr), out)
        }
        Op::Reduce { op, axes } => {
            let input = n.inputs[0];
            let value = b.load(g, input);
            let out = b.expr.push(ExprNode::StageRef(0), dtype);
            Body::Reduce(ReduceBody {
                shape: g.nodes[input].shape().to_vec(),
                axes: axes.clone(),
                expr: b.expr,
                stages: vec![Stage { op: *op, value }],
                out,
                out_full: false,
            })
        }
        Op::Matmul => {
            let (ra, la) = operand(g, n.inputs[0]);
            let (rb, lb) = operand(g, n.inputs[1]);
            let (aa, ab) = (b.arg(ra), b.arg(rb));
            if ra == rb {
                // Same storage read twice (x @ x.t()): `arg` gave both the
                // same slot; the matmul body reads args 0 and 1, so add a second.
                debug_assert_eq!((aa, ab), (0, 0));
                b.args.push(rb);
            } else {
                debug_assert_eq!((aa, ab), (0, 1));
            }
            let r = la.rank();
            let acc_dtype = match dtype {
                DType::F64 => DType::F64,
                DType::I32 => DType::I32,
                _ => DType::F32,
            };
            let acc = b.expr.push(ExprNode::Acc, acc_dtype);
            let out = if acc_dtype == dtype {
                acc
            } else {
                b.expr.push(ExprNode::Cast(dtype, acc), dtype)
            };
            Body::Matmul(MatmulBody {
                batch: la.shape[..r - 2].to_vec(),
                m: la.shape[r - 2],
                k: la.shape[r - 1],
                n: lb.shape[r - 1],
                a: la,
                b: lb,
                acc_dtype,
                epilogue: b.expr,
                out,
            })
        }
        Op::Concat { axis } => {
            let mut parts = Vec::new();
            for &inp in &n.inputs {
                let (r, l) = operand(g, inp);
                b.args.push(r);
                parts.push(l);
            }
            Body::Concat(ConcatBody {
                shape: shape.clone(),
                axis: *axis,
                parts,
            })
        }
        Op::IndexSelect { axis } | Op::Gather { axis } => {
            let (rs, ls) = operand(g, n.inputs[0]);
            let (ri, li) = operand(g, n.inputs[1]);
            b.args.push(rs);
            b.args.push(ri);
            Body::Index(IndexBody {
                shape: shape.clone(),
                axis: *axis,
                src: ls,
                idx: li,
                gather: matches!(op, Op::Gather { .. }),
            })
        }
        Op::Conv2d { pass, geometry } => {
            let (ra, la) = operand(g, n.inputs[0]);
            let (rb, lb) = operand(g, n.inputs[1]);
            b.args.push(ra);
            b.args.push(rb);
            let dims = |s: &[usize]| [s[0], s[1], s[2], s[3]];
            let (x, w, y) = crate::nn::conv_native::operand_shapes(
                *pass,
                dims(&la.shape),
                dims(&lb.shape),
                dims(&shape),
            );
            Body::Conv(ConvBody {
                pass: *pass,
                geometry: *geometry,
                x,
                w,
                y,
                a: la,
                b: lb,
            })
        }
        Op::View(_) => return,
    };
    set_kernel(g, i, body, b.args, dtype, shape);
}

/// The type an `arange` of `len` values of `dtype` computes in: i32 for
/// i32 outputs whose start, step and last value are i32 integers, f32 for
/// f32/f16/bf16/u8/bool outputs, f64 otherwise.
fn arange_dtype(dtype: DType, start: f64, step: f64, len: usize) -> DType {
    let int = |v: f64| v.fract() == 0.0 && v.abs() < (1u64 << 31) as f64;
    let last = start + step * len.saturating_sub(1) as f64;
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 | DType::U8 | DType::Bool => DType::F32,
        DType::I32 if int(start) && int(step) && int(last) => DType::I32,
        _ => DType::F64,
    }
}
