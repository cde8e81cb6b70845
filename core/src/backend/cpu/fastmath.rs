//! Vectorisable f32 transcendentals. `f32::exp` calls libm one element at a
//! time; these are branch-free polynomials LLVM turns into SIMD loops, with
//! errors of a few ulp (checked against f64 in the tests below).

/// The degree-5 minimax polynomial of XNNPACK's "rr2_p5" exponentials,
/// c5 first, kept digit for digit: `(e^r - 1) / r` on |r| <= ln2/2, about
/// 1 ulp. Both exponentials below evaluate it.
#[allow(clippy::excessive_precision)]
const RR2_P5: [f32; 5] = [
    8.289_290_6e-3,
    4.189_782_2e-2,
    1.666_765_2e-1,
    4.999_915e-1,
    9.999_997e-1,
];

/// The constants of [`exp_f32`]. A loop over a slice takes them through
/// [`ExpConsts::opaque`] once, so they live in registers for the whole
/// loop: as literals, LLVM folds them into every use and wasm engines
/// rebuild each `v128.const` on every iteration (V8 does), which doubled the
/// cost of exp on SIMD128.
#[derive(Clone, Copy)]
pub struct ExpConsts {
    lo: f32,
    hi: f32,
    log2e: f32,
    magic: f32,
    magic_bits: i32,
    ln2_hi: f32,
    ln2_lo: f32,
    c: [f32; 5],
    one: f32,
    bias: i32,
}

impl ExpConsts {
    /// Round to nearest with the 1.5·2^23 trick.
    const MAGIC: f32 = 12_582_912.0;
    // The polynomial coefficients are the published minimax values, kept digit for digit.
    #[allow(clippy::excessive_precision)]
    const VALUES: ExpConsts = ExpConsts {
        lo: -105.0,
        hi: 89.0,
        log2e: std::f32::consts::LOG2_E,
        magic: Self::MAGIC,
        magic_bits: Self::MAGIC.to_bits() as i32,
        // Two-part ln2 keeps r exact to f32 precision.
        ln2_hi: 0.693_145_75,
        ln2_lo: 1.428_606_8e-6,
        // e^r = 1 + r·p(r) on |r| <= ln2/2.
        c: RR2_P5,
        one: 1.0,
        bias: 127,
    };

    /// The constants, opaque to the optimiser (see the type's doc).
    #[inline(always)]
    pub fn opaque() -> ExpConsts {
        std::hint::black_box(Self::VALUES)
    }
}

/// e^x for f32: x = n·ln2 + r (|r| <= ln2/2), e^r by a polynomial, times 2^n.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    exp_f32_with(x, &ExpConsts::VALUES)
}

/// [`exp_f32`] with its constants passed in (see [`ExpConsts`]).
#[inline(always)]
pub fn exp_f32_with(x_in: f32, k: &ExpConsts) -> f32 {
    // Outside this range e^x overflows to inf or underflows to 0 anyway; the
    // bounds lie past ln(f32::MAX) ≈ 88.72 and ln(2^-150) ≈ -103.97, so the
    // clamped value still overflows / underflows instead of giving a finite
    // 3.3e38 or the smallest subnormal.
    let x = x_in.clamp(k.lo, k.hi);
    // Round to nearest by adding 1.5·2^23: plain SIMD arithmetic, where
    // `f32::round` would be a scalar libm call that stops vectorisation.
    let t = x * k.log2e + k.magic;
    let n = t - k.magic;
    let r = x - n * k.ln2_hi - n * k.ln2_lo;
    // 1 + r·(c1 + r·(c2 + r·(c3 + r·(c4 + r·c5))))
    let p = k.c[0] * r + k.c[1];
    let p = p * r + k.c[2];
    let p = p * r + k.c[3];
    let p = p * r + k.c[4];
    let er = p * r + k.one;
    // n as an integer, read from t's low mantissa bits (t = 1.5·2^23 + n
    // exactly): `n as i32` saturates, which SSE2 has no vector instruction
    // for, so LLVM would convert one lane at a time.
    let ni = t.to_bits() as i32 - k.magic_bits;
    // 2^n through the exponent bits; n in [-152, 129] is split in two steps
    // so subnormal results and n = 128 stay correct. The halving is a shift,
    // not `/ 2`: vector ISAs (SIMD128, AVX) have no integer division, so a
    // division splits the vector loop into four scalar divides per lane group.
    let half = ni >> 1;
    let s1 = f32::from_bits(((half + k.bias) as u32) << 23);
    let s2 = f32::from_bits(((ni - half + k.bias) as u32) << 23);
    keep_nan(x_in, er * s1 * s2)
}

/// `y`, or `x` when `x` is NaN, in the relaxed-SIMD wasm build only.
///
/// LLVM's wasm backend applies a function's target features to the whole
/// module, so the relaxed build's few relaxed-SIMD kernels let it lower
/// every clamp (`if x < lo { lo } else { x }`, which keeps a NaN `x`) to
/// `f32x4.relaxed_min/max`, whose NaN result is the engine's choice: V8 on
/// x86-64 returned the bound, so exp(NaN) came out 0. The other builds keep
/// the clamp's NaN and skip this compare-and-select.
#[inline(always)]
fn keep_nan(x: f32, y: f32) -> f32 {
    if cfg!(fusegraph_relaxed_madd) && x.is_nan() {
        x
    } else {
        y
    }
}

/// The constants of [`erf_f32_with`], passed like [`ExpConsts`] (opaque,
/// so a loop keeps them in registers).
#[derive(Clone, Copy)]
pub struct ErfConsts {
    /// `erf(x) = x + x·P(x²)` for |x| <= `split`: P's coefficients, constant first.
    small: [f32; 6],
    /// `erf(a) = 1 - e^(-Q(a))` for `split` < a = |x| <= 4: Q's coefficients, constant first.
    big: [f32; 8],
    split: f32,
    /// Past 4, 1 - erf(x) < 1.6e-8 is below half an ulp of 1: erf is ±1.
    four: f32,
    one: f32,
    exp: ExpNonPositiveConsts,
}

impl ErfConsts {
    // Least-squares fits (weighted for relative error, on Chebyshev nodes)
    // of erf(x)/x - 1 in x² on [0, 0.921875] and of -ln(erfc(a)) on
    // [0.87, 4], rounded to f32. The worst error over a dense grid of
    // [-6, 6] and tiny magnitudes is 1.2 ulp (checked in the tests below).
    #[allow(clippy::excessive_precision)]
    const VALUES: ErfConsts = ErfConsts {
        small: [
            0.128_379_166,
            -0.376_125_246,
            0.112_820_394,
            -0.026_772_961,
            0.005_000_901_4,
            -0.000_602_463_61,
        ],
        big: [
            -0.000_165_731_195,
            1.129_472_73,
            0.633_430_064,
            0.108_191_252,
            -0.025_063_958,
            0.004_150_837_7,
            -0.000_430_478_95,
            2.076_835_2e-5,
        ],
        split: 0.921_875,
        four: 4.0,
        one: 1.0,
        exp: ExpNonPositiveConsts::VALUES,
    };

    /// The constants, opaque to the optimiser (see [`ExpConsts`]).
    #[inline(always)]
    pub fn opaque() -> ErfConsts {
        std::hint::black_box(Self::VALUES)
    }
}

/// erf(x) for f32, within about 1.2 ulp, branch-free (both pieces are
/// computed and one is selected) so that a loop over a slice vectorises;
/// `libm::erff` branches per element and runs one lane at a time.
/// NaN gives NaN, ±inf gives ±1, and -0 gives -0.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    erf_f32_with(x, &ErfConsts::VALUES)
}

/// [`erf_f32`] with its constants passed in (see [`ErfConsts`]).
#[inline(always)]
pub fn erf_f32_with(x: f32, k: &ErfConsts) -> f32 {
    let t = x * x;
    let mut p = k.small[5];
    for &c in k.small[..5].iter().rev() {
        p = p * t + c;
    }
    let small = x + x * p;
    // `if` rather than `min`: NaN must stay NaN (f32::min would give 4).
    let a = x.abs();
    let a = if a > k.four { k.four } else { a };
    let mut q = k.big[7];
    for &c in k.big[..7].iter().rev() {
        q = q * a + c;
    }
    // -q lies in [-18, -1.6]: the exponential for non-positive inputs
    // suffices. For NaN it gives some finite value, but NaN takes the
    // other branch (the comparison is false), where `small` is NaN.
    let big = (k.one - exp_nonpositive_with(-q, &k.exp)).copysign(x);
    if x.abs() > k.split {
        big
    } else {
        small
    }
}

/// The constants of [`tanh_f32_with`], passed like [`ExpConsts`] (opaque,
/// so a loop keeps them in registers).
#[derive(Clone, Copy)]
pub struct TanhConsts {
    /// `tanh(x) = x + x·t·P(t)`, t = x², for |x| <= `split`: P's
    /// coefficients, constant first.
    small: [f32; 7],
    split: f32,
    /// Past 10, 1 - tanh(x) < 4.2e-9 is far below half an ulp of 1 (3e-8;
    /// at 9 it is just above): tanh is ±1. Clamping there also keeps
    /// -2|x| inside the exponential's range.
    ten: f32,
    one: f32,
    minus_two: f32,
    exp: ExpNonPositiveConsts,
}

impl TanhConsts {
    // A least-squares fit (weighted for relative error, on Chebyshev
    // nodes) of (tanh(x)/x - 1)/x² in x² on [0, 0.875], rounded to f32:
    // 0.03 ulp of approximation error there. The worst error of the whole
    // function over a dense grid of [-10, 10] and tiny magnitudes is
    // checked in the tests below.
    #[allow(clippy::excessive_precision)]
    const VALUES: TanhConsts = TanhConsts {
        small: [
            -0.333_333_25,
            0.133_330_66,
            -0.053_937_29,
            0.021_696_646,
            -0.008_333_292,
            0.002_652_431_4,
            -0.000_482_988,
        ],
        split: 0.875,
        ten: 10.0,
        one: 1.0,
        minus_two: -2.0,
        exp: ExpNonPositiveConsts::VALUES,
    };

    /// The constants, opaque to the optimiser (see [`ExpConsts`]).
    #[inline(always)]
    pub fn opaque() -> TanhConsts {
        std::hint::black_box(Self::VALUES)
    }
}

/// tanh(x) for f32, within about 2 ulp, branch-free (both pieces are
/// computed and one is selected) so that a loop over a slice vectorises,
/// where `tanhf` branches per element and runs one lane at a time. Past
/// |x| = 0.875 it is 1 - 2e/(1 + e) with e = e^(-2|x|) <= 0.18. NaN gives NaN, ±inf gives ±1, -0 gives -0.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    tanh_f32_with(x, &TanhConsts::VALUES)
}

/// [`tanh_f32`] with its constants passed in (see [`TanhConsts`]).
#[inline(always)]
pub fn tanh_f32_with(x: f32, k: &TanhConsts) -> f32 {
    let t = x * x;
    let mut p = k.small[6];
    for &c in k.small[..6].iter().rev() {
        p = p * t + c;
    }
    let small = x + x * t * p;
    // `if` rather than `min`: NaN must stay NaN (it takes the `small`
    // branch below, where it propagates).
    let a = x.abs();
    let a = if a > k.ten { k.ten } else { a };
    let e = exp_nonpositive_with(k.minus_two * a, &k.exp);
    // 1 - 2e/(1 + e) rather than (1 - e)/(1 + e): the quotient's rounding
    // errors then scale with 2e/(1 + e) <= 0.3, not with the result (1.9
    // ulp worst before, measured).
    let big = k.one - (e + e) / (k.one + e);
    // The sign last: it also gives tanh(-0) = -0, which `small` loses
    // (-0 + 0·P is +0).
    let r = if x.abs() > k.split { big } else { small };
    r.copysign(x)
}

/// `out[i] = f(src[i], &k)` as one loop, with `k` the constants the caller
/// made opaque once (see [`ExpConsts`]).
#[inline(always)]
pub fn map_with<K>(src: &[f32], out: &mut [f32], k: K, f: impl Fn(f32, &K) -> f32) {
    for (o, &x) in out.iter_mut().zip(src) {
        *o = f(x, &k);
    }
}

/// The constants of [`log_f32_with`], passed like [`ExpConsts`].
#[derive(Clone, Copy)]
pub struct LogConsts {
    /// `ln(1 + f) = f - f²/2 + f³·P(f)` on f in [√½ - 1, √2 - 1]: P's
    /// coefficients, highest degree first.
    p: [f32; 9],
    sqrt_half: f32,
    /// ln 2 in two parts: `e·ln2_hi` is exact for the exponents of f32.
    ln2_hi: f32,
    ln2_lo: f32,
    half: f32,
    one: f32,
    /// Subnormal inputs are scaled by 2^23 first, and 23 taken off `e`.
    min_normal: f32,
    two_23: f32,
    twenty_three: f32,
    inf: f32,
    nan: f32,
}

impl LogConsts {
    // P is Cephes' `logf` polynomial, kept digit for digit; so is its
    // two-part ln 2.
    #[allow(clippy::excessive_precision)]
    const VALUES: LogConsts = LogConsts {
        p: [
            7.037_683_629_2e-2,
            -1.151_461_031_0e-1,
            1.167_699_874_0e-1,
            -1.242_014_084_6e-1,
            1.424_932_278_7e-1,
            -1.666_805_766_5e-1,
            2.000_071_476_5e-1,
            -2.499_999_399_3e-1,
            3.333_333_117_4e-1,
        ],
        sqrt_half: std::f32::consts::FRAC_1_SQRT_2,
        ln2_hi: 0.693_359_375,
        ln2_lo: -2.121_944_4e-4,
        half: 0.5,
        one: 1.0,
        min_normal: f32::MIN_POSITIVE,
        two_23: 8_388_608.0,
        twenty_three: 23.0,
        inf: f32::INFINITY,
        nan: f32::NAN,
    };

    /// The constants, opaque to the optimiser (see [`ExpConsts`]).
    #[inline(always)]
    pub fn opaque() -> LogConsts {
        std::hint::black_box(Self::VALUES)
    }
}

/// ln(x) for f32, within about 1 ulp (checked in the tests below),
/// branch-free (every case is computed and selected) so that a loop over
/// a slice vectorises, where `logf` runs one lane at a time. ln(0) = -inf,
/// ln(+inf) = +inf, negative inputs and NaN give NaN; subnormals are exact
/// to the same error. Out of line: its one-element callers (scalar nodes,
/// the per-element fallback) share one copy; slices go through
/// [`log_f32_with`], inlined into their loop.
#[inline(never)]
pub fn log_f32(x: f32) -> f32 {
    log_f32_with(x, &LogConsts::VALUES)
}

/// [`log_f32`] with its constants passed in (see [`LogConsts`]).
#[inline(always)]
pub fn log_f32_with(x: f32, k: &LogConsts) -> f32 {
    let sub = x < k.min_normal;
    let xs = if sub { x * k.two_23 } else { x };
    let bits = xs.to_bits();
    // x = m·2^e with m in [0.5, 1).
    let e = ((bits >> 23) & 0xff) as i32 - 126;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let e = e as f32 - if sub { k.twenty_three } else { 0.0 };
    // Fold m into [√½, √2): f = m - 1 is then small on both sides of 0.
    let low = m < k.sqrt_half;
    let e = if low { e - k.one } else { e };
    let f = if low { m + m - k.one } else { m - k.one };
    let z = f * f;
    let mut p = k.p[0];
    for &c in &k.p[1..] {
        p = p * f + c;
    }
    let y = f * z * p + e * k.ln2_lo - k.half * z;
    let r = f + y + e * k.ln2_hi;
    // Zero, negatives, NaN and +inf, last.
    let r = if x == k.inf { x } else { r };
    if x > 0.0 {
        r
    } else if x == 0.0 {
        -k.inf
    } else {
        k.nan
    }
}

/// The constants of [`exp_nonpositive_with`], passed the same way as
/// [`ExpConsts`] (opaque, so they stay in registers through a loop).
#[derive(Clone, Copy)]
pub struct ExpNonPositiveConsts {
    pub(super) log2e: f32,
    pub(super) magic: f32,
    pub(super) minus_ln2_hi: f32,
    pub(super) minus_ln2_lo: f32,
    pub(super) c: [f32; 5],
    pub(super) lowest: f32,
}

impl ExpNonPositiveConsts {
    // The polynomial coefficients are the published minimax values, kept digit for digit.
    #[allow(clippy::excessive_precision)]
    const VALUES: ExpNonPositiveConsts = ExpNonPositiveConsts {
        log2e: std::f32::consts::LOG2_E,
        // 1.5·2^23 + 127: rounds x·log2(e) to an integer n and leaves
        // 127 + n in the low bits, which shifted left by 23 are 2^n.
        magic: 12_583_039.0,
        minus_ln2_hi: -0.693_145_75,
        minus_ln2_lo: -1.428_606_8e-6,
        c: RR2_P5,
        // Inputs are raised to this first. It rounds to n = -127, where
        // 127 + n = 0 and the shifted scale is +0.0, so the result is
        // exactly 0: one `max` instead of a compare and a mask after.
        lowest: -88.0,
    };

    /// The constants, opaque to the optimiser (see [`ExpConsts`]).
    #[inline(always)]
    pub fn opaque() -> ExpNonPositiveConsts {
        std::hint::black_box(Self::VALUES)
    }
}

/// e^x for x in [-inf, 0] (softmax's `x - max`), about 1 ulp above
/// 1.2e-38, 0 below -87.68 and subnormal approximations between. A third
/// fewer operations than [`exp_f32_with`]: one clamp, and 2^n in one step,
/// since n stays in [-127, 0]. NaN gives NaN; positive inputs give
/// unspecified finite values: callers rule them out.
#[inline(always)]
pub fn exp_nonpositive_with(x: f32, k: &ExpNonPositiveConsts) -> f32 {
    // Written as `f32x4.pmax(x, lowest)` is (x < lowest ? lowest : x), so
    // the SIMD128 softmax kernel's values match these bit for bit.
    let x = if x < k.lowest { k.lowest } else { x };
    let n = x * k.log2e + k.magic;
    let s = f32::from_bits(n.to_bits() << 23);
    let n = n - k.magic;
    let t = n * k.minus_ln2_hi + x;
    let t = n * k.minus_ln2_lo + t;
    // Estrin's scheme rather than Horner's: one more multiply, but the
    // dependency chain is two multiply-adds shorter, and in V8 each
    // vector's chain runs start to end before the next one's begins.
    let t2 = t * t;
    let lo = k.c[3] * t + k.c[4];
    let hi = k.c[1] * t + k.c[2];
    let hi = k.c[0] * t2 + hi;
    let p = hi * t2 + lo;
    // s·e^t = s + (s·t)·p
    (t * s) * p + s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_a_few_ulp() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = (x as f64).exp();
            let got = exp_f32(x) as f64;
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 4e-7, "worst relative error {worst}");
        println!("exp_f32 worst relative error {worst:e}");
        assert_eq!(exp_f32(-200.0), 0.0);
        assert!(exp_f32(100.0).is_infinite());
        assert!(exp_f32(f32::NAN).is_nan());
    }

    #[test]
    fn exp_of_nonpositive_inputs_is_within_a_few_ulp() {
        let k = ExpNonPositiveConsts::opaque();
        let mut worst = 0.0f64;
        let mut x = -87.3f32;
        while x <= 0.0 {
            let want = (x as f64).exp();
            let got = exp_nonpositive_with(x, &k) as f64;
            worst = worst.max(((got - want) / want).abs());
            x += 0.00731;
        }
        assert!(worst < 4e-7, "worst relative error {worst}");
        assert_eq!(exp_nonpositive_with(0.0, &k), 1.0);
        assert_eq!(exp_nonpositive_with(-0.0, &k), 1.0);
        assert_eq!(exp_nonpositive_with(-88.0, &k), 0.0);
        assert_eq!(exp_nonpositive_with(f32::NEG_INFINITY, &k), 0.0);
        assert!(exp_nonpositive_with(f32::NAN, &k).is_nan());
        println!("exp_nonpositive worst relative error {worst:e}");
    }

    #[test]
    fn erf_is_within_two_ulp() {
        let ulp = |v: f64| {
            let f = (v.abs() as f32).max(f32::MIN_POSITIVE);
            (f32::from_bits(f.to_bits() + 1) - f) as f64
        };
        let mut worst = 0.0f64;
        let mut check = |x: f32| {
            let want = crate::graph::op::erf(x as f64);
            let got = erf_f32(x) as f64;
            worst = worst.max((got - want).abs() / ulp(want));
        };
        let mut x = -6.0f32;
        while x < 6.0 {
            check(x);
            x += 0.000_37;
        }
        let mut m = 1e-30f32;
        while m < 1.0 {
            check(m);
            check(-m);
            m *= 1.01;
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
        println!("erf_f32 worst error {worst} ulp");
        assert!(erf_f32(f32::NAN).is_nan());
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(erf_f32(30.0), 1.0);
        assert_eq!(erf_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(erf_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn tanh_is_within_two_ulp() {
        let ulp = |v: f64| {
            let f = (v.abs() as f32).max(f32::MIN_POSITIVE);
            (f32::from_bits(f.to_bits() + 1) - f) as f64
        };
        let k = TanhConsts::opaque();
        let mut worst = (0.0f64, 0.0f32);
        let mut check = |x: f32| {
            let want = (x as f64).tanh();
            let got = tanh_f32_with(x, &k) as f64;
            let err = (got - want).abs() / ulp(want);
            if err > worst.0 {
                worst = (err, x);
            }
        };
        let mut x = -10.0f32;
        while x < 10.0 {
            check(x);
            x += 0.000_37;
        }
        // Both sides of the split, bit by bit.
        for bits in 0.85f32.to_bits()..0.9f32.to_bits() {
            check(f32::from_bits(bits));
        }
        let mut m = 1e-30f32;
        while m < 1.0 {
            check(m);
            check(-m);
            m *= 1.01;
        }
        assert!(worst.0 <= 2.0, "worst error {} ulp at {}", worst.0, worst.1);
        println!("tanh_f32 worst error {} ulp at {}", worst.0, worst.1);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(9.5), 1.0);
        assert_eq!(tanh_f32(30.0), 1.0);
        assert_eq!(tanh_f32(-30.0), -1.0);
        assert_eq!(tanh_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn log_is_within_one_ulp() {
        let ulp = |v: f64| {
            let f = (v.abs() as f32).max(f32::MIN_POSITIVE);
            (f32::from_bits(f.to_bits() + 1) - f) as f64
        };
        let k = LogConsts::opaque();
        let mut worst = (0.0f64, 0.0f32);
        let mut check = |x: f32| {
            let want = (x as f64).ln();
            let got = log_f32_with(x, &k) as f64;
            let err = (got - want).abs() / ulp(want);
            if err > worst.0 {
                worst = (err, x);
            }
        };
        // One f32 in 7 around 1 (where ln is tiny), one subnormal in 997,
        // then a geometric sweep of the normal range.
        for bits in 0.5f32.to_bits()..2.0f32.to_bits() {
            if bits % 7 == 0 {
                check(f32::from_bits(bits));
            }
        }
        for bits in (1..f32::MIN_POSITIVE.to_bits()).step_by(997) {
            check(f32::from_bits(bits));
        }
        let mut x = f32::MIN_POSITIVE;
        while x < f32::MAX / 1.001 {
            check(x);
            x *= 1.000_37;
        }
        assert!(worst.0 <= 1.0, "worst error {} ulp at {}", worst.0, worst.1);
        println!("log_f32 worst error {} ulp at {}", worst.0, worst.1);
        assert_eq!(log_f32(1.0), 0.0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert!(log_f32(-1.0).is_nan());
        assert!(log_f32(f32::NEG_INFINITY).is_nan());
        assert!(log_f32(f32::NAN).is_nan());
        assert_eq!(log_f32(f32::MAX), (f32::MAX as f64).ln() as f32);
    }
}
