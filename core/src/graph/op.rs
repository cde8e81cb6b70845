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
        !matches!(self, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Not)
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
            UnaryOp::Relu => {
                if x > 0.0 {
                    x
                } else if x.is_nan() {
                    x
                } else {
                    0.0
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
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::And | BinaryOp::Or
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
    Narrow { axis: usize, start: usize, len: usize },
    Expand(Vec<usize>),
    /// Relative to the storage of the view's root, checked against its length.
    AsStrided(Layout),
    /// A chain of views composed into one layout over the root (made by the
    /// view-elimination pass).
    Composed(Layout),
}

/// What a graph node computes. Inputs are the node's `inputs`, in order.
#[derive(Debug, Clone, PartialEq, Hash)]
pub enum Op {
    /// A constant of the node's shape.
    Full(Scalar),
    /// `start + step * i` along a 1-D shape.
    Arange { start: Scalar, step: Scalar },
    /// Seeded uniform [0, 1) (`normal == false`) or standard normal values,
    /// from a counter-based hash, so every backend draws the same numbers.
    Rand { seed: u64, normal: bool },
    View(ViewOp),
    /// A copy into a fresh contiguous buffer.
    Contiguous,
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `cond ? a : b` (inputs: cond, a, b).
    Where,
    Cast(DType),
    /// Keeps reduced axes as size 1; the tensor API squeezes them when asked.
    Reduce { op: ReduceOp, axes: Vec<usize> },
    /// `[..., m, k] @ [..., k, n]`, batch axes already broadcast to equal shapes.
    Matmul,
    Concat { axis: usize },
    /// `out[.., j, ..] = x[.., idx[j], ..]` (inputs: x, idx).
    IndexSelect { axis: usize },
    /// `out[i][j] = x[i][idx[i][j]]` along `axis` (inputs: x, idx).
    Gather { axis: usize },
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Full(_) => "full",
            Op::Arange { .. } => "arange",
            Op::Rand { normal: false, .. } => "rand",
            Op::Rand { normal: true, .. } => "randn",
            Op::View(v) => match v {
                ViewOp::Reshape(_) => "reshape",
                ViewOp::Permute(_) => "permute",
                ViewOp::Narrow { .. } => "narrow",
                ViewOp::Expand(_) => "expand",
                ViewOp::AsStrided(_) => "as_strided",
                ViewOp::Composed(_) => "view",
            },
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
        }
    }

    pub fn is_elementwise(&self) -> bool {
        matches!(self, Op::Unary(_) | Op::Binary(_) | Op::Where | Op::Cast(_))
    }
}

/// The error function, to about 1e-15 (W. J. Cody's rational approximations
/// as used by many libms), so the reference path needs no extra crate.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = x.abs();
    let r = if ax < 0.5 {
        let t = x * x;
        let p = [3.209_377_589_138_469_4e3, 3.774_852_376_853_020_2e2, 1.138_641_541_510_501_6e2, 3.161_123_743_870_565_6, 1.857_777_061_846_031_5e-1];
        let q = [2.844_236_833_439_170_6e3, 1.282_616_526_077_372_3e3, 2.440_246_379_344_441_7e2, 2.360_129_095_234_412_1e1, 1.0];
        let num = (((p[4] * t + p[3]) * t + p[2]) * t + p[1]) * t + p[0];
        let den = (((q[4] * t + q[3]) * t + q[2]) * t + q[1]) * t + q[0];
        return x * num / den;
    } else if ax < 4.0 {
        let p = [
            1.230_339_354_797_997_2e3, 2.051_078_377_826_071_6e3, 1.712_047_612_634_070_7e3, 8.819_522_212_417_690_9e2,
            2.986_351_381_974_001_3e2, 6.611_919_063_714_162_9e1, 8.883_149_794_388_375_9, 5.641_884_969_886_700_9e-1,
            2.153_115_354_744_038_5e-8,
        ];
        let q = [
            1.230_339_354_803_749_5e3, 3.439_367_674_143_721_6e3, 4.362_619_090_143_247_2e3, 3.290_799_235_733_459_7e3,
            1.621_389_574_566_690_2e3, 5.371_811_018_620_098_6e2, 1.176_939_508_913_124_9e2, 1.574_492_611_070_983_5e1, 1.0,
        ];
        let mut num = p[8];
        let mut den = q[8];
        for i in (0..8).rev() {
            num = num * ax + p[i];
            den = den * ax + q[i];
        }
        (-ax * ax).exp() * num / den
    } else {
        let p = [-6.587_491_615_298_378_4e-4, -1.608_378_514_874_227_5e-2, -1.257_817_261_112_292_6e-1, -3.603_448_999_498_044_4e-1, -3.053_266_349_612_323_4e-1, -1.631_538_713_730_709_6e-2];
        let q = [2.335_204_976_268_691_8e-3, 6.051_834_131_244_131_9e-2, 5.279_051_029_514_284_1e-1, 1.872_952_849_923_460_4, 2.568_520_192_289_822_4, 1.0];
        let t = 1.0 / (ax * ax);
        let mut num = p[5];
        let mut den = q[5];
        for i in (0..5).rev() {
            num = num * t + p[i];
            den = den * t + q[i];
        }
        let r = t * num / den;
        ((-ax * ax).exp() / ax) * (1.0 / std::f64::consts::PI.sqrt() + r)
    };
    // r holds erfc(|x|) for the two outer ranges.
    let e = 1.0 - r;
    if x < 0.0 {
        -e
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [(0.0, 0.0), (0.1, 0.112_462_916_018_284_9), (1.0, 0.842_700_792_949_714_9), (-2.0, -0.995_322_265_018_952_7), (3.5, 0.999_999_256_901_627_7), (5.0, 0.999_999_999_998_462_5)] {
            assert!((erf(x) - want).abs() < 1e-13, "erf({x}) = {} want {want}", erf(x));
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
