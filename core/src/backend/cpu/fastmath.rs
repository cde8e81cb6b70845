//! Vectorisable f32 transcendentals. `f32::exp` calls libm one element at a
//! time; these are branch-free polynomials LLVM turns into SIMD loops, with
//! errors of a few ulp (checked against f64 in the tests below).

/// e^x for f32, Cephes-style: x = n·ln2 + r, e^r by a degree-6 polynomial.
#[inline(always)]
// The polynomial coefficients are Cephes' published values, kept digit for digit.
#[allow(clippy::excessive_precision)]
pub fn exp_f32(x: f32) -> f32 {
    // Outside this range e^x overflows to inf or underflows to 0 anyway; the
    // bounds lie past ln(f32::MAX) ≈ 88.72 and ln(2^-150) ≈ -103.97, so the
    // clamped value still overflows / underflows instead of giving a finite
    // 3.3e38 or the smallest subnormal.
    let x = x.clamp(-105.0, 89.0);
    // Round to nearest with the 1.5·2^23 trick: plain SSE2 arithmetic, where
    // `f32::round` would be a scalar libm call that stops vectorisation.
    const MAGIC: f32 = 12_582_912.0;
    let n = (x * std::f32::consts::LOG2_E + MAGIC) - MAGIC;
    // Two-part ln2 keeps r exact to f32 precision.
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let p = 1.987_569_1e-4f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 5.000_000_1e-1;
    let er = p * r * r + r + 1.0;
    // 2^n through the exponent bits; n in [-152, 129] is split in two steps
    // so subnormal results and n = 128 stay correct. The halving is a shift,
    // not `/ 2`: vector ISAs (SIMD128, AVX) have no integer division, so a
    // division splits the vector loop into four scalar divides per lane group.
    let ni = n as i32;
    let half = ni >> 1;
    let s1 = f32::from_bits(((half + 127) as u32) << 23);
    let s2 = f32::from_bits(((ni - half + 127) as u32) << 23);
    er * s1 * s2
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
        assert_eq!(exp_f32(-200.0), 0.0);
        assert!(exp_f32(100.0).is_infinite());
        assert!(exp_f32(f32::NAN).is_nan());
    }
}
