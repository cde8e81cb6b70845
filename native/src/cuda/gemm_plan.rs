//! Which matmul kernels cuBLASLt can run, and how: a pure analysis of the
//! kernel IR (no GPU needed, unit-tested here).
//!
//! The kernel computes row-major `out[b, i, j] = epilogue(sum_k a[b,i,k] *
//! b[b,k,j])`. cuBLASLt is column-major, so the call computes the
//! column-major `D (n x m) = op(X) (n x k) * op(Y) (k x m)` with `X` read
//! from `b` and `Y` from `a`: `D`'s memory is exactly the row-major output.
//! A transposed view is a transpose flag, never a copy; an operand whose
//! rows and columns both have non-unit strides is left to the generated
//! kernel. Batches must collapse to one stride per operand (0 broadcasts).
//!
//! The epilogue is recognised when it is one of `acc`, `relu(acc)`,
//! `gelu_tanh(acc)`, `acc + bias[j]`, `relu(acc + bias[j])`,
//! `gelu_tanh(acc + bias[j])` (through casts to the output dtype): cuBLASLt
//! applies it. Anything else runs cuBLASLt into an accumulator-typed
//! scratch buffer and then a generated elementwise kernel: the epilogue
//! with `Acc` replaced by a load of the scratch.

use fusegraph_core::graph::op::{BinaryOp, UnaryOp};
use fusegraph_core::schedule::{
    ArgInfo, Body, Expr, ExprId, ExprNode, Kernel, MapBody, MatmulBody,
};
use fusegraph_core::{DType, Layout};

/// One operand as cuBLASLt sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Operand {
    /// Kernel argument it is read from.
    pub arg: usize,
    pub transpose: bool,
    /// The stored matrix's rows and columns (before `op`), column-major.
    pub rows: u64,
    pub cols: u64,
    pub ld: i64,
    /// Elements between batches (0: the same matrix for every batch).
    pub batch_stride: i64,
    /// Element offset of the first element.
    pub offset: usize,
}

/// What cuBLASLt applies after the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Activation {
    None,
    Relu,
    GeluTanh,
}

/// The epilogue: fused into cuBLASLt, or a generated kernel over scratch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Epilogue {
    Fused {
        act: Activation,
        /// `(arg, element offset)` of a bias along the output's last axis.
        bias: Option<(usize, usize)>,
    },
    /// The product goes to scratch of `acc_dtype`; this kernel finishes it.
    Kernel(Box<Kernel>),
}

/// A matmul kernel as one cuBLASLt call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GemmPlan {
    pub x: Operand,
    pub y: Operand,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    /// Dtype of both operands.
    pub dtype: DType,
    /// Dtype cuBLASLt writes (the output's, or the accumulator's for scratch).
    pub d_dtype: DType,
    pub epilogue: Epilogue,
}

/// The one stride that walks all batch dims in order, if there is one.
fn batch_stride(shape: &[usize], strides: &[isize]) -> Option<i64> {
    let mut stride: Option<i64> = None;
    let mut inner: i64 = 1;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d == 1 {
            continue;
        }
        match stride {
            None => stride = Some(s as i64),
            Some(st) if s as i64 == st * inner => {}
            Some(_) => return None,
        }
        inner *= d as i64;
    }
    let s = stride.unwrap_or(0);
    (s >= 0).then_some(s)
}

/// `op(M)` of shape `out_rows x out_cols` with element `(r, c)` at
/// `r * s_r + c * s_c`: plain column-major when `s_r` is 1, transposed when
/// `s_c` is 1.
fn operand(
    arg: usize,
    out_rows: usize,
    out_cols: usize,
    s_r: isize,
    s_c: isize,
    batch_stride: i64,
    offset: usize,
) -> Option<Operand> {
    let (r, c) = (out_rows as i64, out_cols as i64);
    let unit_r = out_rows == 1 || s_r == 1;
    let unit_c = out_cols == 1 || s_c == 1;
    // Plain: rows = out_rows, cols = out_cols, ld = s_c.
    if unit_r {
        let ld = if out_cols == 1 { r.max(1) } else { s_c as i64 };
        if ld >= r.max(1) {
            return Some(Operand {
                arg,
                transpose: false,
                rows: out_rows as u64,
                cols: out_cols as u64,
                ld,
                batch_stride,
                offset,
            });
        }
    }
    // Transposed: stored rows = out_cols, cols = out_rows, ld = s_r.
    if unit_c {
        let ld = if out_rows == 1 { c.max(1) } else { s_r as i64 };
        if ld >= c.max(1) {
            return Some(Operand {
                arg,
                transpose: true,
                rows: out_cols as u64,
                cols: out_rows as u64,
                ld,
                batch_stride,
                offset,
            });
        }
    }
    None
}

fn gemm_dtype(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
}

/// The cuBLASLt plan of a matmul kernel, or `None` for the generated kernel.
pub(crate) fn plan(k: &Kernel) -> Option<GemmPlan> {
    let Body::Matmul(mm) = &k.body else {
        return None;
    };
    let dtype = k.args.first()?.dtype;
    if !gemm_dtype(dtype) || k.args.get(1)?.dtype != dtype {
        return None;
    }
    if mm.m == 0 || mm.n == 0 || mm.k == 0 {
        return None;
    }
    let r = mm.batch.len();
    let (a, b) = (&mm.a, &mm.b);
    if a.strides.iter().chain(&b.strides).any(|&s| s < 0) {
        return None;
    }
    let bsa = batch_stride(&a.shape[..r], &a.strides[..r])?;
    let bsb = batch_stride(&b.shape[..r], &b.strides[..r])?;
    // X: op(X)[j, kk] = b[kk, j] -> (rows n, cols k) with s_r = sb_n, s_c = sb_k.
    let x = operand(1, mm.n, mm.k, b.strides[r + 1], b.strides[r], bsb, b.offset)?;
    // Y: op(Y)[kk, i] = a[i, kk] -> (rows k, cols m) with s_r = sa_k, s_c = sa_m.
    let y = operand(0, mm.k, mm.m, a.strides[r + 1], a.strides[r], bsa, a.offset)?;
    let out_dtype = k.out_dtype;
    let epilogue = match fused_epilogue(k, mm) {
        Some(e) if out_dtype == dtype && dtype != DType::F64 => e,
        Some(Epilogue::Fused {
            act: Activation::None,
            bias: None,
        }) if out_dtype == dtype => Epilogue::Fused {
            act: Activation::None,
            bias: None,
        },
        _ => Epilogue::Kernel(Box::new(epilogue_kernel(k, mm))),
    };
    let d_dtype = match epilogue {
        Epilogue::Fused { .. } => out_dtype,
        Epilogue::Kernel(_) => mm.acc_dtype,
    };
    Some(GemmPlan {
        x,
        y,
        m: mm.m as u64,
        n: mm.n as u64,
        k: mm.k as u64,
        batch: mm.batch.iter().product::<usize>() as u64,
        dtype,
        d_dtype,
        epilogue,
    })
}

/// Skips casts that only round to the output dtype or widen exactly.
fn strip(e: &Expr, mut id: ExprId, out: DType) -> ExprId {
    while let ExprNode::Cast(to, x) = &e.nodes[id] {
        let from = e.dtypes[*x];
        let widening = from != DType::F64
            && *to == DType::F32
            && matches!(from, DType::F16 | DType::BF16 | DType::F32);
        if *to == out || widening {
            id = *x;
        } else {
            break;
        }
    }
    id
}

fn is_acc(e: &Expr, id: ExprId, out: DType) -> bool {
    matches!(e.nodes[strip(e, id, out)], ExprNode::Acc)
}

/// A bias along the last axis: a load of the output's dtype that is
/// broadcast over every axis but the last, with unit stride there.
fn bias_of(k: &Kernel, mm: &MatmulBody, e: &Expr, id: ExprId) -> Option<(usize, usize)> {
    let ExprNode::Load { arg, access } = &e.nodes[id] else {
        return None;
    };
    if *arg < 2 || k.args[*arg].dtype != k.out_dtype {
        return None;
    }
    let r = access.strides.len();
    let broadcast = access.strides[..r - 1].iter().all(|&s| s == 0);
    let unit = mm.n == 1 || access.strides[r - 1] == 1;
    (broadcast && unit).then_some((*arg, access.offset))
}

fn fused_epilogue(k: &Kernel, mm: &MatmulBody) -> Option<Epilogue> {
    let e = &mm.epilogue;
    let out = k.out_dtype;
    let mut id = strip(e, mm.out, out);
    let act = match &e.nodes[id] {
        ExprNode::Unary(UnaryOp::Relu, x) => {
            id = strip(e, *x, out);
            Activation::Relu
        }
        ExprNode::Unary(UnaryOp::GeluTanh, x) => {
            id = strip(e, *x, out);
            Activation::GeluTanh
        }
        _ => Activation::None,
    };
    if matches!(e.nodes[id], ExprNode::Acc) {
        return Some(Epilogue::Fused { act, bias: None });
    }
    if let ExprNode::Binary(BinaryOp::Add, p, q) = &e.nodes[id] {
        let (p, q) = (*p, *q);
        let bias = if is_acc(e, p, out) {
            bias_of(k, mm, e, strip(e, q, out))
        } else if is_acc(e, q, out) {
            bias_of(k, mm, e, strip(e, p, out))
        } else {
            None
        };
        return bias.map(|b| Epilogue::Fused { act, bias: Some(b) });
    }
    None
}

/// The epilogue as an elementwise kernel that reads the product from an
/// extra argument (the scratch buffer) where the matmul had `Acc`.
fn epilogue_kernel(k: &Kernel, mm: &MatmulBody) -> Kernel {
    let shape = mm.out_shape();
    let scratch = k.args.len();
    let mut expr = mm.epilogue.clone();
    for n in expr.nodes.iter_mut() {
        if matches!(n, ExprNode::Acc) {
            *n = ExprNode::Load {
                arg: scratch,
                access: Layout::contiguous(&shape),
            };
        }
    }
    let mut args = k.args.clone();
    args.push(ArgInfo {
        dtype: mm.acc_dtype,
        len: shape.iter().product(),
    });
    Kernel {
        body: Body::Map(MapBody {
            shape: shape.clone(),
            expr,
            out: mm.out,
        }),
        args,
        out_dtype: k.out_dtype,
        out_shape: k.out_shape.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusegraph_core::runtime::{compiled_for, limits_for};
    use fusegraph_core::{Device, Tensor};

    fn matmul_kernel(t: &Tensor) -> Kernel {
        let c = compiled_for(std::slice::from_ref(t), &limits_for(Device::Cpu).unwrap()).unwrap();
        c.schedule
            .steps
            .iter()
            .map(|s| (*s.kernel).clone())
            .find(|k| matches!(k.body, Body::Matmul(_)))
            .expect("a matmul kernel")
    }

    fn leaf(shape: &[usize], dtype: DType) -> Tensor {
        let t = Tensor::randn(shape.to_vec(), 1, dtype, &Device::Cpu).unwrap();
        t.realize().unwrap();
        t
    }

    #[test]
    fn plain_matmul_is_one_call_without_copies() {
        let a = leaf(&[8, 4], DType::F32);
        let b = leaf(&[4, 6], DType::F32);
        let p = plan(&matmul_kernel(&a.matmul(&b).unwrap())).unwrap();
        assert_eq!((p.m, p.n, p.k, p.batch), (8, 6, 4, 1));
        assert_eq!(
            p.x,
            Operand {
                arg: 1,
                transpose: false,
                rows: 6,
                cols: 4,
                ld: 6,
                batch_stride: 0,
                offset: 0
            }
        );
        assert_eq!(
            p.y,
            Operand {
                arg: 0,
                transpose: false,
                rows: 4,
                cols: 8,
                ld: 4,
                batch_stride: 0,
                offset: 0
            }
        );
        assert_eq!(
            p.epilogue,
            Epilogue::Fused {
                act: Activation::None,
                bias: None
            }
        );
    }

    #[test]
    fn transposed_views_become_flags() {
        let a = leaf(&[4, 8], DType::F32);
        let b = leaf(&[6, 4], DType::F32);
        let p = plan(&matmul_kernel(
            &a.t().unwrap().matmul(&b.t().unwrap()).unwrap(),
        ))
        .unwrap();
        assert!(p.x.transpose && p.y.transpose);
        assert_eq!((p.x.rows, p.x.cols, p.x.ld), (4, 6, 4));
        assert_eq!((p.y.rows, p.y.cols, p.y.ld), (8, 4, 8));
    }

    #[test]
    fn batched_matmul_has_batch_strides() {
        let a = leaf(&[3, 8, 4], DType::F16);
        let b = leaf(&[3, 4, 6], DType::F16);
        let p = plan(&matmul_kernel(&a.matmul(&b).unwrap())).unwrap();
        assert_eq!(p.batch, 3);
        assert_eq!((p.x.batch_stride, p.y.batch_stride), (24, 32));
    }

    #[test]
    fn bias_relu_fuses_and_other_tails_use_scratch() {
        let a = leaf(&[8, 4], DType::F32);
        let b = leaf(&[4, 6], DType::F32);
        let bias = leaf(&[6], DType::F32);
        let y = a.matmul(&b).unwrap().add(&bias).unwrap().relu().unwrap();
        let p = plan(&matmul_kernel(&y)).unwrap();
        assert!(matches!(
            p.epilogue,
            Epilogue::Fused {
                act: Activation::Relu,
                bias: Some((2, 0))
            }
        ));
        let z = a
            .matmul(&b)
            .unwrap()
            .mul_scalar(2.0)
            .unwrap()
            .exp()
            .unwrap();
        let p = plan(&matmul_kernel(&z)).unwrap();
        assert!(matches!(p.epilogue, Epilogue::Kernel(_)));
        assert_eq!(p.d_dtype, DType::F32);
    }

    #[test]
    fn integer_matmul_uses_the_generated_kernel() {
        let a = leaf(&[4, 4], DType::F32).cast(DType::I32).unwrap();
        let b = leaf(&[4, 4], DType::F32).cast(DType::I32).unwrap();
        a.realize().unwrap();
        b.realize().unwrap();
        assert!(plan(&matmul_kernel(&a.matmul(&b).unwrap())).is_none());
    }
}
