//! Elementwise ops. Broadcasting is done here with `expand` views and dtype
//! promotion with casts, so the graph only ever sees same-shape operands.

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::op::{BinaryOp, Op, UnaryOp};
use crate::shape::broadcast_shapes;

macro_rules! unary_methods {
    ($($name:ident => $op:ident, $doc:literal;)*) => {
        impl Tensor {
            $(
                #[doc = $doc]
                pub fn $name(&self) -> Result<Tensor> {
                    self.unary(UnaryOp::$op)
                }
            )*
        }
    };
}

unary_methods! {
    neg => Neg, "`-x`.";
    abs => Abs, "`|x|`.";
    exp => Exp, "`e^x`.";
    log => Log, "Natural logarithm.";
    sqrt => Sqrt, "Square root.";
    rsqrt => Rsqrt, "`1/sqrt(x)`.";
    sin => Sin, "Sine.";
    cos => Cos, "Cosine.";
    tanh => Tanh, "Hyperbolic tangent.";
    sigmoid => Sigmoid, "`1/(1+e^-x)`.";
    relu => Relu, "`max(x, 0)` (NaN stays NaN).";
    gelu => GeluErf, "GELU with the exact erf.";
    gelu_tanh => GeluTanh, "GELU with the tanh approximation.";
    silu => Silu, "`x * sigmoid(x)`.";
    logical_not => Not, "Logical not; the result is bool.";
}

macro_rules! binary_methods {
    ($($name:ident, $scalar:ident => $op:ident, $doc:literal;)*) => {
        impl Tensor {
            $(
                #[doc = $doc]
                pub fn $name(&self, rhs: &Tensor) -> Result<Tensor> {
                    self.binary(BinaryOp::$op, rhs)
                }
                #[doc = $doc]
                #[doc = "\n\nThe scalar takes this tensor's dtype, as a Python number does in PyTorch."]
                pub fn $scalar(&self, rhs: f64) -> Result<Tensor> {
                    let s = Tensor::scalar(rhs, self.dtype(), &self.device)?;
                    self.binary(BinaryOp::$op, &s)
                }
            )*
        }
    };
}

binary_methods! {
    add, add_scalar => Add, "Sum with NumPy broadcasting.";
    sub, sub_scalar => Sub, "Difference with NumPy broadcasting.";
    mul, mul_scalar => Mul, "Product with NumPy broadcasting.";
    div, div_scalar => Div, "Quotient (integer dtypes truncate; /0 gives 0).";
    pow, pow_scalar => Pow, "`self^rhs`.";
    maximum, maximum_scalar => Maximum, "Elementwise max (NaN propagates).";
    minimum, minimum_scalar => Minimum, "Elementwise min (NaN propagates).";
    eq, eq_scalar => Eq, "`==`, as bool.";
    ne, ne_scalar => Ne, "`!=`, as bool.";
    lt, lt_scalar => Lt, "`<`, as bool.";
    le, le_scalar => Le, "`<=`, as bool.";
    gt, gt_scalar => Gt, "`>`, as bool.";
    ge, ge_scalar => Ge, "`>=`, as bool.";
    logical_and, logical_and_scalar => And, "Logical and, as bool.";
    logical_or, logical_or_scalar => Or, "Logical or, as bool.";
}

impl Tensor {
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        let x = match op {
            UnaryOp::Not => self.cast(DType::Bool)?,
            UnaryOp::Neg if self.dtype() == DType::Bool => {
                return Err(Error::UnsupportedDType {
                    op: "neg",
                    dtype: DType::Bool,
                    why: "use logical_not for bool",
                })
            }
            _ if op.needs_float() => self.cast(self.dtype().to_float())?,
            _ => self.clone(),
        };
        let dtype = if op == UnaryOp::Not {
            DType::Bool
        } else {
            x.dtype()
        };
        Tensor::lazy(Op::Unary(op), &[&x], dtype, x.shape(), x.device)
    }

    pub fn binary(&self, op: BinaryOp, rhs: &Tensor) -> Result<Tensor> {
        let device = Tensor::same_device(op.name(), self, rhs)?;
        let shape = broadcast_shapes(op.name(), self.shape(), rhs.shape())?;
        let mut dtype = DType::promote(self.dtype(), rhs.dtype());
        if matches!(op, BinaryOp::And | BinaryOp::Or) {
            dtype = DType::Bool;
        } else if op == BinaryOp::Pow && dtype == DType::Bool {
            dtype = DType::U8;
        }
        let a = self.cast(dtype)?.expand(shape.clone())?;
        let b = rhs.cast(dtype)?.expand(shape.clone())?;
        let out = if op.is_predicate() {
            DType::Bool
        } else {
            dtype
        };
        Tensor::lazy(Op::Binary(op), &[&a, &b], out, &shape, device)
    }

    /// Converts to `dtype` (float to int truncates toward zero and saturates; to bool is `!= 0`).
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        Tensor::lazy(Op::Cast(dtype), &[self], dtype, self.shape(), self.device)
    }

    /// `cond ? a : b`, all three broadcast together; `cond` is read as bool.
    pub fn where_cond(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        Tensor::same_device("where", cond, a)?;
        let device = Tensor::same_device("where", a, b)?;
        let shape = broadcast_shapes(
            "where",
            &broadcast_shapes("where", cond.shape(), a.shape())?,
            b.shape(),
        )?;
        let dtype = DType::promote(a.dtype(), b.dtype());
        let c = cond.cast(DType::Bool)?.expand(shape.clone())?;
        let a = a.cast(dtype)?.expand(shape.clone())?;
        let b = b.cast(dtype)?.expand(shape.clone())?;
        Tensor::lazy(Op::Where, &[&c, &a, &b], dtype, &shape, device)
    }

    /// Limits values to `[lo, hi]` (NaN stays NaN).
    pub fn clamp(&self, lo: f64, hi: f64) -> Result<Tensor> {
        if lo > hi || lo.is_nan() || hi.is_nan() {
            return Err(Error::InvalidArgument {
                op: "clamp",
                what: "bounds",
                expected: "lo <= hi",
                got: format!("lo={lo}, hi={hi}"),
            });
        }
        self.maximum_scalar(lo)?.minimum_scalar(hi)
    }
}
