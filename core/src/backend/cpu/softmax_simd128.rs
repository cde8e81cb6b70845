//! The two hot loops of the softmax row kernel written with wasm SIMD128
//! intrinsics, as XNNPACK writes its `raddstoreexpminusmax` and `rmax`
//! microkernels.
//!
//! From plain Rust, LLVM vectorised the exponential but not the sum beside
//! it (that loop stayed scalar), so the row took a map loop, a second pass
//! for the sum and a max pass that carried a NaN probe per element. Here
//! the exponential, its store and the running sum are one loop over four
//! f32x4 vectors at a time, and the max is `f32x4.pmax` (one `maxps` in V8;
//! `f32x4.max`'s NaN rules cost several instructions) with NaN caught by a
//! lane compare beside it. The arithmetic per element is that of
//! [`exp_nonpositive_with`], operation for operation (SIMD128 has no fused
//! multiply-add), so the stored values are the scalar path's bit for bit;
//! only the order of the sum differs.
//!
//! The gain is small (2-4% in side-by-side runs on a 2-core Xeon VM): the
//! 24 vector operations of the exponential per four elements are the
//! bound, as they are for XNNPACK's kernel.

use core::arch::wasm32::*;

use crate::backend::cpu::fastmath::{exp_nonpositive_with, ExpNonPositiveConsts};

/// The row's maximum, NaN when any element is NaN.
pub fn row_max(x: &[f32]) -> f32 {
    let mut it = x.chunks_exact(8);
    let mut m0 = f32x4_splat(f32::NEG_INFINITY);
    let mut m1 = m0;
    let mut nan = i32x4_splat(0);
    for c in &mut it {
        let (a, b) = load2(c);
        // pmax(m, v) = m < v ? v : m keeps m when v is NaN, so NaN lanes
        // are flagged separately.
        m0 = f32x4_pmax(m0, a);
        m1 = f32x4_pmax(m1, b);
        nan = v128_or(nan, v128_or(f32x4_ne(a, a), f32x4_ne(b, b)));
    }
    let m = f32x4_pmax(m0, m1);
    let mut best = [0.0f32; 4];
    // SAFETY: `best` is 16 bytes; v128_store has no alignment requirement.
    unsafe { v128_store(best.as_mut_ptr().cast(), m) };
    let mut max = best
        .iter()
        .fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
    let mut any_nan = v128_any_true(nan);
    for &v in it.remainder() {
        any_nan |= v.is_nan();
        max = if v > max { v } else { max };
    }
    if any_nan {
        f32::NAN
    } else {
        max
    }
}

/// `out = exp(x - m)` for a finite `m`, returning the sum of `out`. The
/// sum runs in f32 lanes within blocks of 4096 elements and in f64 across
/// blocks, as the general row kernel's `Acc::Sum` does.
pub fn store_exp_minus_max_and_sum(x: &[f32], out: &mut [f32], m: f32) -> f32 {
    let k = ExpNonPositiveConsts::opaque();
    let mut total = 0.0f64;
    for (xs, os) in x.chunks(4096).zip(out.chunks_mut(4096)) {
        total += block(xs, os, m, &k);
    }
    total as f32
}

#[inline(always)]
fn block(x: &[f32], out: &mut [f32], m: f32, k: &ExpNonPositiveConsts) -> f64 {
    let v = Splats::new(m, k);
    let mut s0 = f32x4_splat(0.0);
    let mut s1 = s0;
    let mut xs = x.chunks_exact(16);
    let mut os = out.chunks_exact_mut(16);
    for (xc, oc) in (&mut xs).zip(&mut os) {
        let (a, b) = load2(xc);
        let (c, d) = load2(&xc[8..]);
        let (ea, eb, ec, ed) = (v.exp(a), v.exp(b), v.exp(c), v.exp(d));
        // SAFETY: `oc` is exactly 16 f32 (64 bytes); stores are unaligned.
        unsafe {
            v128_store(oc.as_mut_ptr().cast(), ea);
            v128_store(oc.as_mut_ptr().add(4).cast(), eb);
            v128_store(oc.as_mut_ptr().add(8).cast(), ec);
            v128_store(oc.as_mut_ptr().add(12).cast(), ed);
        }
        s0 = f32x4_add(s0, f32x4_add(ea, ec));
        s1 = f32x4_add(s1, f32x4_add(eb, ed));
    }
    let s = f32x4_add(s0, s1);
    let mut lanes = [0.0f32; 4];
    // SAFETY: `lanes` is 16 bytes.
    unsafe { v128_store(lanes.as_mut_ptr().cast(), s) };
    let mut part = 0.0f32;
    for (o, &xv) in os.into_remainder().iter_mut().zip(xs.remainder()) {
        *o = exp_nonpositive_with(xv - m, k);
        part += *o;
    }
    lanes.iter().map(|&l| l as f64).sum::<f64>() + part as f64
}

#[inline(always)]
fn load2(c: &[f32]) -> (v128, v128) {
    debug_assert!(c.len() >= 8);
    // SAFETY: callers pass chunks of at least 8 f32; loads are unaligned.
    unsafe {
        (
            v128_load(c.as_ptr().cast()),
            v128_load(c.as_ptr().add(4).cast()),
        )
    }
}

/// The constants splatted once per block, so the loop keeps them in
/// registers.
struct Splats {
    m: v128,
    log2e: v128,
    magic: v128,
    minus_ln2_hi: v128,
    minus_ln2_lo: v128,
    c: [v128; 5],
    cutoff: v128,
}

impl Splats {
    #[inline(always)]
    fn new(m: f32, k: &ExpNonPositiveConsts) -> Self {
        Splats {
            m: f32x4_splat(m),
            log2e: f32x4_splat(k.log2e),
            magic: f32x4_splat(k.magic),
            minus_ln2_hi: f32x4_splat(k.minus_ln2_hi),
            minus_ln2_lo: f32x4_splat(k.minus_ln2_lo),
            c: k.c.map(|c| f32x4_splat(c)),
            cutoff: f32x4_splat(k.cutoff),
        }
    }

    /// [`exp_nonpositive_with`]`(x - m)` on four lanes.
    #[inline(always)]
    fn exp(&self, x: v128) -> v128 {
        let d = f32x4_sub(x, self.m);
        let n = f32x4_add(f32x4_mul(d, self.log2e), self.magic);
        let s = i32x4_shl(n, 23);
        let n = f32x4_sub(n, self.magic);
        let t = f32x4_add(f32x4_mul(n, self.minus_ln2_hi), d);
        let t = f32x4_add(f32x4_mul(n, self.minus_ln2_lo), t);
        let c = &self.c;
        let p = f32x4_add(f32x4_mul(c[0], t), c[1]);
        let p = f32x4_add(f32x4_mul(p, t), c[2]);
        let p = f32x4_add(f32x4_mul(p, t), c[3]);
        let p = f32x4_add(f32x4_mul(p, t), c[4]);
        let f = f32x4_add(f32x4_mul(f32x4_mul(t, s), p), s);
        // Below the cutoff the result is flushed to 0.
        v128_andnot(f, f32x4_lt(d, self.cutoff))
    }
}
