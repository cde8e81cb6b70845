//! The counter-based random numbers behind `rand`/`randn`. Each element's
//! value is a pure function of (seed, linear index) using only 32-bit integer
//! operations, so the CPU, WGSL and CUDA kernels draw identical numbers.

/// PCG-RXS-M-XS 32-bit output permutation (Jarzynski & Olano, "Hash
/// Functions for GPU Rendering", 2020): a fast, well-mixed 32-bit hash.
#[inline(always)]
pub fn pcg_hash(x: u32) -> u32 {
    let state = x.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// The per-tensor key: both halves of the 64-bit seed mixed into 32 bits.
#[inline(always)]
pub fn seed_key(seed: u64) -> u32 {
    pcg_hash((seed as u32) ^ pcg_hash((seed >> 32) as u32))
}

/// Uniform in [0, 1) with 24 random bits (every value is an exact f32).
#[inline(always)]
pub fn uniform(key: u32, index: u32) -> f32 {
    (pcg_hash(index ^ key) >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Standard normal by Box–Muller from the uniforms at counters 2i and 2i+1.
#[inline(always)]
pub fn normal(key: u32, index: u32) -> f32 {
    let u1 = uniform(key, index.wrapping_mul(2));
    let u2 = uniform(key, index.wrapping_mul(2).wrapping_add(1));
    // 1 - u1 lies in (0, 1], so the log is finite. Evaluated in f64 and
    // rounded once: f32 log/cos differ by an ulp between libms (glibc vs
    // CUDA), while the f64 value rounds to the same f32 on every backend with
    // accurate f64 functions (the CUDA kernels compute it the same way).
    let (u1, u2) = (u1 as f64, u2 as f64);
    ((-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_has_the_right_moments() {
        let key = seed_key(42);
        let n = 100_000u32;
        let (mut s, mut s2) = (0.0f64, 0.0f64);
        for i in 0..n {
            let u = uniform(key, i) as f64;
            assert!((0.0..1.0).contains(&u));
            s += u;
            s2 += u * u;
        }
        let mean = s / n as f64;
        let var = s2 / n as f64 - mean * mean;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
        assert!((var - 1.0 / 12.0).abs() < 0.005, "var {var}");
    }

    #[test]
    fn normal_has_the_right_moments() {
        let key = seed_key(7);
        let n = 100_000u32;
        let (mut s, mut s2) = (0.0f64, 0.0f64);
        for i in 0..n {
            let z = normal(key, i) as f64;
            s += z;
            s2 += z * z;
        }
        let mean = s / n as f64;
        let var = s2 / n as f64 - mean * mean;
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.03, "var {var}");
    }

    #[test]
    fn seeds_differ() {
        assert_ne!(uniform(seed_key(1), 0), uniform(seed_key(2), 0));
        assert_ne!(seed_key(1), seed_key(1 << 32));
    }
}
