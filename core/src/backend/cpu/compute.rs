//! The number types the fast path computes in: f32 for f32/f16/bf16/u8/bool
//! kernels, f64 when an f64 or i32 value is involved (i32 is exact in f64).

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::backend::cpu::fastmath;
use crate::dtype::{DType, Element};
use crate::graph::op::{wrap_int, BinaryOp, UnaryOp};

pub trait Compute:
    Copy
    + Send
    + Sync
    + PartialOrd
    + PartialEq
    + Default
    + std::fmt::Debug
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const NEG_INF: Self;
    const INF: Self;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn from_elem<E: Element>(e: E) -> Self;
    fn is_nan(self) -> bool;
    fn unary(op: UnaryOp, x: Self) -> Self;
    fn powf(self, y: Self) -> Self;
    /// e^x, vectorisable.
    fn exp_fast(self) -> Self;
    /// `out = e^src`, one vector loop.
    fn exp_chunk(src: &[Self], out: &mut [Self]) {
        for (o, &x) in out.iter_mut().zip(src) {
            *o = x.exp_fast();
        }
    }
    /// `out = gelu(src)` with the exact erf (as [`Compute::unary`] computes it).
    fn gelu_chunk(src: &[Self], out: &mut [Self]) {
        for (o, &x) in out.iter_mut().zip(src) {
            *o = Self::unary(UnaryOp::GeluErf, x);
        }
    }
    /// `out = ln(src)` (as [`Compute::unary`] computes it).
    fn log_chunk(src: &[Self], out: &mut [Self]) {
        for (o, &x) in out.iter_mut().zip(src) {
            *o = Self::unary(UnaryOp::Log, x);
        }
    }
    /// `out = tanh(src)` (as [`Compute::unary`] computes it).
    fn tanh_chunk(src: &[Self], out: &mut [Self]) {
        for (o, &x) in out.iter_mut().zip(src) {
            *o = Self::unary(UnaryOp::Tanh, x);
        }
    }
    /// `out = gelu(src)` with the tanh approximation (as [`Compute::unary`] computes it).
    fn gelu_tanh_chunk(src: &[Self], out: &mut [Self]) {
        for (o, &x) in out.iter_mut().zip(src) {
            *o = Self::unary(UnaryOp::GeluTanh, x);
        }
    }
    /// The storage's elements when they already have this type (no conversion needed).
    fn native(s: &crate::backend::cpu::CpuStorage) -> Option<&[Self]>;
    /// A cast to u8 ([`crate::dtype::cast_u8`]: truncate, saturate, NaN to
    /// 0) kept in this type. Written as clamp-then-truncate so it is a few
    /// vector instructions, not a call per element.
    fn cast_u8(self) -> Self;
    /// A cast to i32 ([`crate::dtype::cast_i32`]) kept in this type.
    fn cast_i32(self) -> Self;
    /// This value stored as element type `E`, as a cast to `E` rounds it.
    fn store<E: Element>(self) -> E;
}

macro_rules! compute_impl {
    ($t:ty, $erf:path, $tanh:path, $log:path, $exp:path, { $($extra:item)* }) => {
        impl Compute for $t {
            $($extra)*
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NEG_INF: Self = <$t>::NEG_INFINITY;
            const INF: Self = <$t>::INFINITY;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_elem<E: Element>(e: E) -> Self {
                e.to_f64() as $t
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn powf(self, y: Self) -> Self {
                <$t>::powf(self, y)
            }
            #[inline(always)]
            fn exp_fast(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn native(s: &crate::backend::cpu::CpuStorage) -> Option<&[Self]> {
                <$t as Element>::slice(s)
            }
            #[inline(always)]
            fn cast_u8(self) -> Self {
                // The truncation sees 0..=255 (NaN becomes 0).
                (crate::dtype::clamp_u8_range(self) as i32) as $t
            }
            #[inline(always)]
            fn cast_i32(self) -> Self {
                (self as i32) as $t
            }
            #[inline(always)]
            fn unary(op: UnaryOp, x: Self) -> Self {
                match op {
                    UnaryOp::Neg => -x,
                    UnaryOp::Abs => x.abs(),
                    UnaryOp::Exp => x.exp_fast(),
                    UnaryOp::Log => $log(x),
                    UnaryOp::Sqrt => x.sqrt(),
                    UnaryOp::Rsqrt => 1.0 / x.sqrt(),
                    UnaryOp::Sin => x.sin(),
                    UnaryOp::Cos => x.cos(),
                    UnaryOp::Tanh => $tanh(x),
                    UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp_fast()),
                    UnaryOp::Relu => {
                        if x < 0.0 {
                            0.0
                        } else {
                            x
                        }
                    }
                    UnaryOp::GeluErf => {
                        0.5 * x * (1.0 + $erf(x * std::f64::consts::FRAC_1_SQRT_2 as $t))
                    }
                    UnaryOp::GeluTanh => {
                        0.5 * x * (1.0 + $tanh(GELU_TANH_SCALE as $t * (x + 0.044715 * x * x * x)))
                    }
                    UnaryOp::Silu => x / (1.0 + (-x).exp_fast()),
                    UnaryOp::Not => (x == 0.0) as u8 as $t,
                }
            }
        }
    };
}

/// sqrt(2/pi), the tanh GELU's scale.
const GELU_TANH_SCALE: f64 = std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2;

compute_impl!(
    f32,
    fastmath::erf_f32,
    fastmath::tanh_f32,
    fastmath::log_f32,
    fastmath::exp_f32,
    {
        #[inline(always)]
        fn store<E: Element>(self) -> E {
            E::from_f32(self)
        }
        // Each loop takes its constants opaque once (see `fastmath::ExpConsts`)
        // and computes the same formula as `unary`'s arm for the op.
        fn exp_chunk(src: &[f32], out: &mut [f32]) {
            fastmath::map_with(
                src,
                out,
                fastmath::ExpConsts::opaque(),
                fastmath::exp_f32_with,
            );
        }
        fn gelu_chunk(src: &[f32], out: &mut [f32]) {
            let c = std::f64::consts::FRAC_1_SQRT_2 as f32;
            fastmath::map_with(src, out, fastmath::ErfConsts::opaque(), |x, k| {
                0.5 * x * (1.0 + fastmath::erf_f32_with(x * c, k))
            });
        }
        fn log_chunk(src: &[f32], out: &mut [f32]) {
            fastmath::map_with(
                src,
                out,
                fastmath::LogConsts::opaque(),
                fastmath::log_f32_with,
            );
        }
        fn tanh_chunk(src: &[f32], out: &mut [f32]) {
            fastmath::map_with(
                src,
                out,
                fastmath::TanhConsts::opaque(),
                fastmath::tanh_f32_with,
            );
        }
        fn gelu_tanh_chunk(src: &[f32], out: &mut [f32]) {
            let c = GELU_TANH_SCALE as f32;
            fastmath::map_with(src, out, fastmath::TanhConsts::opaque(), |x, k| {
                0.5 * x * (1.0 + fastmath::tanh_f32_with(c * (x + 0.044715 * x * x * x), k))
            });
        }
    }
);
compute_impl!(f64, libm::erf, f64::tanh, f64::ln, f64::exp, {
    #[inline(always)]
    fn store<E: Element>(self) -> E {
        E::from_f64(self)
    }
});

/// An operand of a binary op over a chunk: one value per position, or one
/// value for all of them (a constant, a row's reduced value), which is read
/// as a scalar rather than filled into a buffer and streamed.
#[derive(Clone, Copy)]
pub enum Operand<'a, T> {
    Slice(&'a [T]),
    Scalar(T),
}

impl<T: Copy> Operand<'_, T> {
    #[inline(always)]
    fn at(&self, j: usize) -> T {
        match self {
            Operand::Slice(s) => s[j],
            Operand::Scalar(v) => *v,
        }
    }
}

/// Applies `op` to a chunk: `out = op(a, b)`. Loops are simple so
/// LLVM vectorises the common ones (add, mul, max, compare), once with a
/// slice and once with a scalar right operand.
#[inline]
pub fn binary_chunk<T: Compute>(
    op: BinaryOp,
    dtype: DType,
    a: Operand<T>,
    b: Operand<T>,
    out: &mut [T],
) {
    match (a, b) {
        (Operand::Slice(a), b) => binary_slice(op, dtype, a, b, out),
        // A scalar on the left (`c - x`, `1 / x`) is rarer: it is spread
        // over a small stack buffer and the slice loops run, which keeps
        // the wasm build from carrying a third copy of every loop.
        (Operand::Scalar(x), Operand::Slice(b)) => {
            const N: usize = 256;
            let spread = [x; N];
            for (o, b) in out.chunks_mut(N).zip(b.chunks(N)) {
                binary_slice(op, dtype, &spread[..o.len()], Operand::Slice(b), o);
            }
        }
        (Operand::Scalar(x), Operand::Scalar(y)) => {
            let mut o = [T::ZERO];
            binary_slice(op, dtype, &[x], Operand::Scalar(y), &mut o);
            out.fill(o[0]);
        }
    }
}

fn binary_slice<T: Compute>(op: BinaryOp, dtype: DType, a: &[T], b: Operand<T>, out: &mut [T]) {
    let t = |c: bool| if c { T::ONE } else { T::ZERO };
    // Arithmetic on bool is bool (true + true = true, true / false = false)
    // as in the reference, so it takes the integer path that wraps to 0/1.
    if dtype.is_int() || (dtype == DType::Bool && !op.is_predicate()) {
        for (j, (o, &x)) in out.iter_mut().zip(a).enumerate() {
            *o = T::from_f64(op.eval_int(x.to_f64(), b.at(j).to_f64(), dtype));
        }
        return;
    }
    macro_rules! each {
        (|$x:ident, $y:ident| $e:expr) => {
            match b {
                Operand::Slice(b) => {
                    for ((o, &$x), &$y) in out.iter_mut().zip(a).zip(b) {
                        *o = $e;
                    }
                }
                Operand::Scalar($y) => {
                    for (o, &$x) in out.iter_mut().zip(a) {
                        *o = $e;
                    }
                }
            }
        };
    }
    match op {
        BinaryOp::Add => each!(|x, y| x + y),
        BinaryOp::Sub => each!(|x, y| x - y),
        BinaryOp::Mul => each!(|x, y| x * y),
        BinaryOp::Div => each!(|x, y| x / y),
        BinaryOp::Pow => each!(|x, y| x.powf(y)),
        BinaryOp::Maximum => each!(|x, y| if x.is_nan() || y.is_nan() {
            x + y
        } else if x > y {
            x
        } else {
            y
        }),
        BinaryOp::Minimum => each!(|x, y| if x.is_nan() || y.is_nan() {
            x + y
        } else if x < y {
            x
        } else {
            y
        }),
        BinaryOp::Eq => each!(|x, y| t(x == y)),
        BinaryOp::Ne => each!(|x, y| t(x != y)),
        BinaryOp::Lt => each!(|x, y| t(x < y)),
        BinaryOp::Le => each!(|x, y| t(x <= y)),
        BinaryOp::Gt => each!(|x, y| t(x > y)),
        BinaryOp::Ge => each!(|x, y| t(x >= y)),
        BinaryOp::And => each!(|x, y| t(x != T::ZERO && y != T::ZERO)),
        BinaryOp::Or => each!(|x, y| t(x != T::ZERO || y != T::ZERO)),
    }
}

/// Rounds a chunk to what `dtype` holds, as a cast does.
pub fn cast_chunk<T: Compute>(dtype: DType, a: &mut [T]) {
    match dtype {
        DType::F32 => {
            for x in a.iter_mut() {
                *x = T::from_f64(x.to_f64() as f32 as f64);
            }
        }
        DType::F64 => {}
        DType::Bool => {
            for x in a.iter_mut() {
                *x = if *x != T::ZERO { T::ONE } else { T::ZERO };
            }
        }
        DType::U8 => {
            for x in a.iter_mut() {
                *x = x.cast_u8();
            }
        }
        DType::I32 => {
            for x in a.iter_mut() {
                *x = x.cast_i32();
            }
        }
        DType::F16 | DType::BF16 => {
            for x in a.iter_mut() {
                *x = T::from_f64(dtype.round_f64(x.to_f64()));
            }
        }
    }
}

/// Wraps integer results (used where an op's result dtype is an integer).
pub fn wrap_chunk<T: Compute>(dtype: DType, a: &mut [T]) {
    for x in a.iter_mut() {
        *x = T::from_f64(wrap_int(x.to_f64() as i64, dtype));
    }
}

/// `out = op(src)` with the op chosen outside the loop, so each arm is its
/// own tight (vectorisable) loop.
#[inline]
pub fn unary_chunk<T: Compute>(op: UnaryOp, src: &[T], out: &mut [T]) {
    macro_rules! each {
        ($o:expr) => {
            for (o, &x) in out.iter_mut().zip(src) {
                *o = T::unary($o, x);
            }
        };
    }
    match op {
        UnaryOp::Neg => each!(UnaryOp::Neg),
        UnaryOp::Abs => each!(UnaryOp::Abs),
        UnaryOp::Exp => T::exp_chunk(src, out),
        UnaryOp::Log => T::log_chunk(src, out),
        UnaryOp::Sqrt => each!(UnaryOp::Sqrt),
        UnaryOp::Rsqrt => each!(UnaryOp::Rsqrt),
        UnaryOp::Sin => each!(UnaryOp::Sin),
        UnaryOp::Cos => each!(UnaryOp::Cos),
        UnaryOp::Tanh => T::tanh_chunk(src, out),
        UnaryOp::Sigmoid => each!(UnaryOp::Sigmoid),
        UnaryOp::Relu => each!(UnaryOp::Relu),
        UnaryOp::GeluErf => T::gelu_chunk(src, out),
        UnaryOp::GeluTanh => T::gelu_tanh_chunk(src, out),
        UnaryOp::Silu => each!(UnaryOp::Silu),
        UnaryOp::Not => each!(UnaryOp::Not),
    }
}
