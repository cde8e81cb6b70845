//! Element types, their promotion rules, and the [`Element`] trait that maps a
//! Rust type to its [`DType`].

use crate::backend::cpu::CpuStorage;
use half::{bf16, f16};
use std::fmt;

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I32,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    /// Every dtype, in promotion order.
    pub const ALL: [DType; 7] = [
        DType::Bool,
        DType::U8,
        DType::I32,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes one element takes in storage.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I32)
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Parses the names printed by [`DType::name`].
    pub fn parse(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The type two operands are computed in, as NumPy and PyTorch promote:
    /// bool < u8 < i32 < floats, and f16 with bf16 meet at f32.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        match (a, b) {
            (x, y) if x == y => x,
            (F16, BF16) | (BF16, F16) => F32,
            (x, y) => x.max(y),
        }
    }

    /// The dtype a float-only op (exp, sqrt, ...) computes in for this input:
    /// floats stay, integers and bool go to f32 as in PyTorch.
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F32
        }
    }

    /// Rounds an f64 to the nearest value this dtype can hold, with the
    /// conversion semantics of a cast: truncation toward zero then saturation
    /// for u8 and i32 (NaN becomes 0), non-zero is true for bool.
    pub fn round_f64(self, v: f64) -> f64 {
        match self {
            DType::F64 => v,
            DType::F32 => v as f32 as f64,
            DType::F16 => f16::from_f64(v).to_f64(),
            DType::BF16 => bf16::from_f64(v).to_f64(),
            DType::I32 => cast_i32(v) as f64,
            DType::U8 => cast_u8(v) as f64,
            DType::Bool => (v != 0.0) as u8 as f64,
        }
    }
}

/// Float → i32 as C and CUDA do for in-range values (truncate), saturating at
/// the ends and mapping NaN to 0 so no value is undefined.
pub fn cast_i32(v: f64) -> i32 {
    v as i32
}

/// Float → u8: truncate, saturate to 0..=255, NaN to 0.
pub fn cast_u8(v: f64) -> u8 {
    v as u8
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can be the element of a tensor.
pub trait Element: Copy + Send + Sync + PartialEq + fmt::Debug + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    /// The same as `from_f64(v as f64)`; integer types override it with a
    /// form that vectorises from f32 lanes.
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        Self::from_f64(v as f64)
    }
    /// Wraps a vector as CPU storage without copying.
    fn into_storage(v: Vec<Self>) -> CpuStorage;
    /// The elements, if `s` holds this type.
    fn slice(s: &CpuStorage) -> Option<&[Self]>;
    /// The vector back, if `s` holds this type (no copy).
    fn into_vec(s: CpuStorage) -> std::result::Result<Vec<Self>, CpuStorage>;
}

/// `v` (f32 or f64) clamped to `0.0..=255.0`, NaN to 0. Written as
/// compare-and-select rather than `max`/`min`, whose NaN rule has no SIMD128
/// instruction, so loops over float lanes stay vectorised.
#[inline(always)]
pub fn clamp_u8_range<T: PartialOrd + From<u8>>(v: T) -> T {
    let v = if v > T::from(0) { v } else { T::from(0) };
    if v < T::from(255) {
        v
    } else {
        T::from(255)
    }
}

macro_rules! element {
    ($t:ty, $d:expr, $var:ident, |$s:ident| $to:expr, |$v:ident| $from:expr $(, $extra:item)*) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            $($extra)*
            fn into_storage(v: Vec<Self>) -> CpuStorage {
                CpuStorage::$var(v)
            }
            fn slice(s: &CpuStorage) -> Option<&[Self]> {
                match s {
                    CpuStorage::$var(v) => Some(v),
                    _ => None,
                }
            }
            fn into_vec(s: CpuStorage) -> std::result::Result<Vec<Self>, CpuStorage> {
                match s {
                    CpuStorage::$var(v) => Ok(v),
                    other => Err(other),
                }
            }
            fn to_f64(self) -> f64 {
                let $s = self;
                $to
            }
            fn from_f64($v: f64) -> Self {
                $from
            }
        }
    };
}

element!(f32, DType::F32, F32, |s| s as f64, |v| v as f32);
element!(f64, DType::F64, F64, |s| s, |v| v);
element!(f16, DType::F16, F16, |s| s.to_f64(), |v| f16::from_f64(v));
element!(bf16, DType::BF16, BF16, |s| s.to_f64(), |v| bf16::from_f64(
    v
));
element!(i32, DType::I32, I32, |s| s as f64, |v| cast_i32(v));
element!(
    u8,
    DType::U8,
    U8,
    |s| s as f64,
    |v| cast_u8(v),
    // `cast_u8` on f32 lanes: clamp (NaN to 0), then truncate.
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        clamp_u8_range(v) as i32 as u8
    }
);
element!(bool, DType::Bool, Bool, |s| s as u8 as f64, |v| v != 0.0);

/// A scalar value with its dtype, as used for constants in graphs and kernels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scalar {
    pub value: f64,
    pub dtype: DType,
}

impl Scalar {
    /// A constant, already rounded to what `dtype` can hold.
    pub fn new(value: f64, dtype: DType) -> Self {
        Scalar {
            value: dtype.round_f64(value),
            dtype,
        }
    }

    /// Bits that identify the constant in a structural hash (NaN payloads aside).
    pub fn key(&self) -> (u64, DType) {
        (self.value.to_bits(), self.dtype)
    }
}

// Constants are compared bit-for-bit in practice (hash-consing of kernel
// expressions); a NaN constant that never equals itself only costs a
// duplicate node, never a wrong one.
impl Eq for Scalar {}

impl std::hash::Hash for Scalar {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_numpy_lattice() {
        assert_eq!(DType::promote(DType::I32, DType::F16), DType::F16);
        assert_eq!(DType::promote(DType::F16, DType::BF16), DType::F32);
        assert_eq!(DType::promote(DType::Bool, DType::U8), DType::U8);
        assert_eq!(DType::promote(DType::F32, DType::F64), DType::F64);
    }

    #[test]
    fn casts_saturate_and_truncate() {
        assert_eq!(DType::U8.round_f64(300.7), 255.0);
        assert_eq!(DType::U8.round_f64(-3.0), 0.0);
        assert_eq!(DType::I32.round_f64(-2.9), -2.0);
        assert_eq!(DType::I32.round_f64(f64::NAN), 0.0);
        assert_eq!(DType::Bool.round_f64(0.25), 1.0);
    }
}
