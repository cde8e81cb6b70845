//! The ops a graph node can hold. Elementwise ops are small enums shared by
//! the graph, the kernel IR and every renderer, so one name means one thing
//! from `tensor.rs` down to the WGSL text.

use crate::dtype::{DType, Scalar};
use crate::layout::Layout;

/// One-input elementwise ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    /// GELU with the exact erf: `x/2 * (1 + erf(x/√2))`.
    GeluErf,
    /// GELU with the tanh approximation used by GPT-2 and `approximate="tanh"`.
    GeluTanh,
    Silu,
    /// Logical not (bool in, bool out).
    Not,
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::GeluErf => "gelu",
            UnaryOp::GeluTanh => "gelu_tanh",
            UnaryOp::Silu => "silu",
            UnaryOp::Not => "not",
        }
    }

    /// True for ops defined only on floats (integer inputs are cast to f32 first).
    pub fn needs_float(self) -> bool {
        !matches!(
            self,
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Not
        )
    }

    /// Rough FLOPs per element, for the roofline (transcendentals count as several).
    pub fn flops(self) -> u64 {
        match self {
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Not => 1,
            UnaryOp::Sqrt | UnaryOp::Rsqrt => 2,
            UnaryOp::Exp | UnaryOp::Log | UnaryOp::Sin | UnaryOp::Cos => 4,
            UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Silu => 6,
            UnaryOp::GeluErf | UnaryOp::GeluTanh => 10,
        }
    }

    /// Exact f64 value, the definition every backend is checked against.
    pub fn eval_f64(self, x: f64) -> f64 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            // NaN stays NaN: only a number below zero becomes 0.
            UnaryOp::Relu => {
                if x < 0.0 {
                    0.0
                } else {
                    x
                }
            }
            UnaryOp::GeluErf => 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
            UnaryOp::GeluTanh => {
                let c = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
            }
            UnaryOp::Silu => x / (1.0 + (-x).exp()),
            UnaryOp::Not => (x == 0.0) as u8 as f64,
        }
    }
}

/// Two-input elementwise ops (NumPy broadcasting happens before, as views).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Eq => "eq",
            BinaryOp::Ne => "ne",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::And => "logical_and",
            BinaryOp::Or => "logical_or",
        }
    }

    /// Comparisons and logical ops produce bool.
    pub fn is_predicate(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::Ne
                | BinaryOp::Lt
                | BinaryOp::Le
                | BinaryOp::Gt
                | BinaryOp::Ge
                | BinaryOp::And
                | BinaryOp::Or
        )
    }

    pub fn flops(self) -> u64 {
        match self {
            BinaryOp::Pow => 8,
            BinaryOp::Div => 2,
            _ => 1,
        }
    }

    /// Exact f64 value for float operands. Integer dtypes go through
    /// [`BinaryOp::eval_int`] so that division truncates and overflow wraps.
    pub fn eval_f64(self, a: f64, b: f64) -> f64 {
        let t = |c: bool| c as u8 as f64;
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Pow => a.powf(b),
            BinaryOp::Maximum => nan_max(a, b),
            BinaryOp::Minimum => nan_min(a, b),
            BinaryOp::Eq => t(a == b),
            BinaryOp::Ne => t(a != b),
            BinaryOp::Lt => t(a < b),
            BinaryOp::Le => t(a <= b),
            BinaryOp::Gt => t(a > b),
            BinaryOp::Ge => t(a >= b),
            BinaryOp::And => t(a != 0.0 && b != 0.0),
            BinaryOp::Or => t(a != 0.0 || b != 0.0),
        }
    }

    /// Integer semantics (i32 and u8, computed in i64 then wrapped to `dtype`):
    /// division truncates toward zero, division by zero gives 0 (CUDA and
    /// WGSL leave it undefined; we pick one answer for every backend).
    pub fn eval_int(self, a: f64, b: f64, dtype: DType) -> f64 {
        let (x, y) = (a as i64, b as i64);
        let v = match self {
            BinaryOp::Add => x.wrapping_add(y),
            BinaryOp::Sub => x.wrapping_sub(y),
            BinaryOp::Mul => x.wrapping_mul(y),
            BinaryOp::Div => {
                if y == 0 {
                    0
                } else {
                    x.wrapping_div(y)
                }
            }
            BinaryOp::Pow => {
                if y < 0 {
                    0
                } else {
                    x.wrapping_pow(y.min(u32::MAX as i64) as u32)
                }
            }
            _ => return self.eval_f64(a, b),
        };
        wrap_int(v, dtype)
    }
}

/// Wraps an i64 into i32 or u8 as two's-complement arithmetic does.
pub fn wrap_int(v: i64, dtype: DType) -> f64 {
    match dtype {
        DType::U8 => (v as u8) as f64,
        DType::Bool => (v != 0) as u8 as f64,
        _ => (v as i32) as f64,
    }
}

/// max that propagates NaN, as PyTorch's `maximum` does.
pub fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// min that propagates NaN, as PyTorch's `minimum` does.
pub fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// Reductions over a set of axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// Index (i32) of the first maximum along the reduced axes, flattened in row-major order.
    ArgMax,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::ArgMax => "argmax",
        }
    }

    /// Value of an empty reduction.
    pub fn identity(self) -> f64 {
        match self {
            ReduceOp::Sum => 0.0,
            ReduceOp::Max | ReduceOp::ArgMax => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        }
    }
}

/// How a view node derives its layout from its input's layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ViewOp {
    Reshape(Vec<usize>),
    Permute(Vec<usize>),
    Narrow {
        axis: usize,
        start: usize,
        len: usize,
    },
    Expand(Vec<usize>),
    /// Relative to the storage of the view's root, checked against its length.
    AsStrided(Layout),
    /// A chain of views composed into one layout over the root (made by the
    /// view-elimination pass).
    Composed(Layout),
    /// The same elements, with no gradient flowing back through it
    /// (`Tensor::detach`).
    Detach,
}

impl ViewOp {
    /// The op's name in errors and graph dumps.
    pub fn name(&self) -> &'static str {
        match self {
            ViewOp::Reshape(_) => "reshape",
            ViewOp::Detach => "detach",
            ViewOp::Permute(_) => "permute",
            ViewOp::Narrow { .. } => "narrow",
            ViewOp::Expand(_) => "expand",
            ViewOp::AsStrided(_) => "as_strided",
            ViewOp::Composed(_) => "view",
        }
    }
}

/// Stride, zero padding and dilation of a native convolution, per spatial
/// axis `[h, w]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvGeometry {
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
}

/// Which of a convolution's three products a [`Op::Conv2d`] node computes.
/// Activations are NHWC and weights `[o, kh, kw, c]`, all contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConvPass {
    /// `y = conv(x, w)` (inputs: x, w).
    Forward,
    /// `dx` from `dy` (inputs: dy, w): the transposed convolution.
    BackwardData,
    /// `dw` from the input and `dy` (inputs: x, dy).
    BackwardFilter,
}

impl ConvPass {
    pub fn name(self) -> &'static str {
        match self {
            ConvPass::Forward => "conv2d",
            ConvPass::BackwardData => "conv2d_backward_data",
            ConvPass::BackwardFilter => "conv2d_backward_filter",
        }
    }
}

/// What a graph node computes. Inputs are the node's `inputs`, in order.
#[derive(Debug, Clone, PartialEq, Hash)]
pub enum Op {
    /// A constant of the node's shape.
    Full(Scalar),
    /// `start + step * i` along a 1-D shape.
    Arange {
        start: Scalar,
        step: Scalar,
    },
    /// Seeded uniform [0, 1) (`normal == false`) or standard normal values,
    /// from a counter-based hash, so every backend draws the same numbers.
    Rand {
        seed: u64,
        normal: bool,
    },
    View(ViewOp),
    /// A copy into a fresh contiguous buffer.
    Contiguous,
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `cond ? a : b` (inputs: cond, a, b).
    Where,
    Cast(DType),
    /// Keeps reduced axes as size 1; the tensor API squeezes them when asked.
    Reduce {
        op: ReduceOp,
        axes: Vec<usize>,
    },
    /// `[..., m, k] @ [..., k, n]`, batch axes already broadcast to equal shapes.
    Matmul,
    Concat {
        axis: usize,
    },
    /// `out[.., j, ..] = x[.., idx[j], ..]` (inputs: x, idx).
    IndexSelect {
        axis: usize,
    },
    /// `out[i][j] = x[i][idx[i][j]]` along `axis` (inputs: x, idx).
    Gather {
        axis: usize,
    },
    /// A convolution product for backends with a native convolution
    /// (cuDNN); the others get im2col + matmul at the tensor level.
    Conv2d {
        pass: ConvPass,
        geometry: ConvGeometry,
    },
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Full(_) => "full",
            Op::Arange { .. } => "arange",
            Op::Rand { normal: false, .. } => "rand",
            Op::Rand { normal: true, .. } => "randn",
            Op::View(v) => v.name(),
            Op::Contiguous => "contiguous",
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Where => "where",
            Op::Cast(_) => "cast",
            Op::Reduce { op, .. } => op.name(),
            Op::Matmul => "matmul",
            Op::Concat { .. } => "concat",
            Op::IndexSelect { .. } => "index_select",
            Op::Gather { .. } => "gather",
            Op::Conv2d { pass, .. } => pass.name(),
        }
    }

    pub fn is_elementwise(&self) -> bool {
        matches!(self, Op::Unary(_) | Op::Binary(_) | Op::Where | Op::Cast(_))
    }
}

/// The error function (libm's, accurate to about 1 ulp in f64).
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.1, 0.112_462_916_018_284_9),
            (1.0, 0.842_700_792_949_714_9),
            (-2.0, -0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_7),
            (5.0, 0.999_999_999_998_462_5),
        ] {
            assert!(
                (erf(x) - want).abs() < 1e-13,
                "erf({x}) = {} want {want}",
                erf(x)
            );
        }
    }

    #[test]
    fn integer_division_truncates_and_wraps() {
        assert_eq!(BinaryOp::Div.eval_int(-7.0, 2.0, DType::I32), -3.0);
        assert_eq!(BinaryOp::Div.eval_int(7.0, 0.0, DType::I32), 0.0);
        assert_eq!(BinaryOp::Add.eval_int(250.0, 10.0, DType::U8), 4.0);
        assert_eq!(BinaryOp::Mul.eval_int(65536.0, 65536.0, DType::I32), 0.0);
    }
}
