//! The softmax row kernel's passes written with wasm SIMD128 intrinsics,
//! as XNNPACK writes its `rmax` and `raddstoreexpminusmax` microkernels.
//!
//! From plain Rust, LLVM vectorised the exponential but not the sum beside
//! it (that loop stayed scalar), so the row took a map loop, a second pass
//! for the sum and a max pass that carried a NaN probe per element. Here
//! the exponential, its store and the running sum are one loop over four
//! f32x4 vectors at a time, and the max is `f32x4.pmax` (one `maxps` in V8;
//! `f32x4.max`'s NaN rules cost several instructions), which passes over
//! NaNs: they show up in the sum instead. In the SIMD128 build the
//! arithmetic per element is that of [`exp_nonpositive_with`], operation
//! for operation, so the stored values are the scalar path's bit for bit;
//! only the order of the sum differs.
//!
//! What bounds it is the exponential: 22 vector operations per four
//! elements in the SIMD128 build, as in XNNPACK's kernel (a clamp first
//! instead of a compare and mask after, and one more multiply for Estrin's
//! shorter chain). The relaxed-SIMD build (`--cfg fusegraph_relaxed_madd`,
//! wasm/npm's dist/relaxed/) turns its eight multiply-adds into
//! `f32x4.relaxed_madd`: an FMA where the engine and CPU have one (V8 on
//! x86-64 with FMA3, ARM64), which leaves 15 operations (it masks after
//! instead of clamping, see `Splats::exp`) and rounds once where the
//! SIMD128 build rounds twice (about 1.3x faster rows side by side).

use core::arch::wasm32::*;

use crate::backend::cpu::fastmath::{exp_nonpositive_with, ExpNonPositiveConsts};
use crate::backend::cpu::softmax_rows::softmax_row_nonfinite_max;

/// One row: `out = exp(x - max(x)) * (1 / sum)`, as the portable
/// `softmax_rows::softmax_row` computes it. The max and the sum are
/// reduced across lanes with shuffles and the max stays splatted for the
/// exponential: reduced through memory and scalar code, each cost some 20
/// cycles of latency that the next pass waited on (rows of 128 took 17%
/// longer).
pub fn softmax_row(x: &[f32], out: &mut [f32], exp: &ExpMinusMax) {
    let m = row_max(x);
    let m0 = f32x4_extract_lane::<0>(m);
    // An infinite max (+inf, or a row of -inf): the full-range exponential.
    if !m0.is_finite() {
        return softmax_row_nonfinite_max(x, out, m0);
    }
    let sum = f32x4_extract_lane::<0>(exp.store_and_sum(x, out, m));
    // `pmax` passes over NaNs, so the max is finite with NaNs in the row;
    // their exponentials are NaN and so is the sum. Probing the sum once
    // instead of every element in the max pass saves two of that pass's
    // three operations per vector; a row with a NaN is then redone.
    if sum.is_nan() {
        return softmax_row_nonfinite_max(x, out, f32::NAN);
    }
    let scale = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= scale;
    }
}

/// The row's maximum in every lane, NaNs passed over.
fn row_max(x: &[f32]) -> v128 {
    // Four running maxima, so the loop is not held to one `maxps` latency
    // per eight elements.
    let mut it = x.chunks_exact(16);
    let mut m0 = f32x4_splat(f32::NEG_INFINITY);
    let (mut m1, mut m2, mut m3) = (m0, m0, m0);
    for c in &mut it {
        let (a, b) = load2(c);
        let (d, e) = load2(&c[8..]);
        // pmax(m, v) = m < v ? v : m keeps m when v is NaN.
        m0 = f32x4_pmax(m0, a);
        m1 = f32x4_pmax(m1, b);
        m2 = f32x4_pmax(m2, d);
        m3 = f32x4_pmax(m3, e);
    }
    let mut m = f32x4_pmax(f32x4_pmax(m0, m1), f32x4_pmax(m2, m3));
    for &v in it.remainder() {
        m = f32x4_pmax(m, f32x4_splat(v));
    }
    // Every lane gets the maximum of the four.
    m = f32x4_pmax(m, i32x4_shuffle::<2, 3, 0, 1>(m, m));
    f32x4_pmax(m, i32x4_shuffle::<1, 0, 3, 2>(m, m))
}

/// `out = exp(x - m)` for rows of one task, with the exponential's
/// constants read and splatted once per task rather than once per row
/// (2-3% on rows of 128 elements).
pub struct ExpMinusMax {
    k: ExpNonPositiveConsts,
    v: Splats,
}

impl ExpMinusMax {
    pub fn new() -> Self {
        let k = ExpNonPositiveConsts::opaque();
        ExpMinusMax {
            k,
            v: Splats::new(&k),
        }
    }

    /// `out = exp(x - m)` for a finite `m` (the same in every lane),
    /// returning the sum of `out` in every lane. The sum runs in f32 lanes
    /// within blocks of 4096 elements and in f64 across blocks, as the
    /// general row kernel's `Acc::Sum` does.
    fn store_and_sum(&self, x: &[f32], out: &mut [f32], m: v128) -> v128 {
        // One block (every row of up to 4096): its f32 sum as is. The f64
        // round trip below gives the same value, but its latency sits
        // between this pass and the scale pass; taking it for every row
        // measured 3-6% slower on the relaxed build.
        if x.len() <= 4096 {
            return self.block(x, out, m);
        }
        let mut total = 0.0f64;
        for (xs, os) in x.chunks(4096).zip(out.chunks_mut(4096)) {
            total += f32x4_extract_lane::<0>(self.block(xs, os, m)) as f64;
        }
        f32x4_splat(total as f32)
    }

    // Never inlined (one call per row or per 4096 elements): a function of
    // its own gets its own register allocation in the engine. Inlined into
    // the CPU backend's dispatcher, V8 kept the constants and the sums on
    // the stack and reloaded them in the loop. The relaxed build compiles
    // it (and the exponential inlined into it) with relaxed SIMD.
    #[cfg_attr(fusegraph_relaxed_madd, target_feature(enable = "relaxed-simd"))]
    #[inline(never)]
    fn block(&self, x: &[f32], out: &mut [f32], mv: v128) -> v128 {
        let v = &self.v;
        let mut s0 = f32x4_splat(0.0);
        let mut s1 = s0;
        let mut xs = x.chunks_exact(16);
        let mut os = out.chunks_exact_mut(16);
        for (xc, oc) in (&mut xs).zip(&mut os) {
            let (a, b) = load2(xc);
            let (c, d) = load2(&xc[8..]);
            let (ea, eb, ec, ed) = (v.exp(a, mv), v.exp(b, mv), v.exp(c, mv), v.exp(d, mv));
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
        let mut s = f32x4_add(s0, s1);
        let m = f32x4_extract_lane::<0>(mv);
        for (o, &xv) in os.into_remainder().iter_mut().zip(xs.remainder()) {
            *o = exp_nonpositive_with(xv - m, &self.k);
            s = f32x4_add(s, f32x4_replace_lane::<0>(f32x4_splat(0.0), *o));
        }
        // Every lane gets the sum of the four.
        s = f32x4_add(s, i32x4_shuffle::<2, 3, 0, 1>(s, s));
        f32x4_add(s, i32x4_shuffle::<1, 0, 3, 2>(s, s))
    }
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

/// The exponential's constants, splatted.
struct Splats {
    log2e: v128,
    magic: v128,
    minus_ln2_hi: v128,
    minus_ln2_lo: v128,
    c: [v128; 5],
    lowest: v128,
}

impl Splats {
    #[inline(always)]
    fn new(k: &ExpNonPositiveConsts) -> Self {
        Splats {
            log2e: f32x4_splat(k.log2e),
            magic: f32x4_splat(k.magic),
            minus_ln2_hi: f32x4_splat(k.minus_ln2_hi),
            minus_ln2_lo: f32x4_splat(k.minus_ln2_lo),
            c: k.c.map(|c| f32x4_splat(c)),
            lowest: f32x4_splat(k.lowest),
        }
    }

    /// [`exp_nonpositive_with`]`(x - m)` on four lanes.
    #[inline(always)]
    fn exp(&self, x: v128, m: v128) -> v128 {
        // SIMD128 clamps first: `pmax` keeps a NaN `d` (NaN < lowest is
        // false), so a NaN in the row makes its sum NaN. The relaxed build
        // masks after instead: there LLVM lowers `f32x4.pmax` to
        // `f32x4.relaxed_max` (a module-wide consequence of the relaxed-SIMD
        // kernels, see `fastmath::keep_nan`), and V8 on x86-64 returned
        // `lowest` for a NaN `d`, an exponential of 0 that hid the NaN.
        let d = f32x4_sub(x, m);
        let d = if RELAXED {
            d
        } else {
            f32x4_pmax(d, self.lowest)
        };
        let n = madd(d, self.log2e, self.magic);
        let s = i32x4_shl(n, 23);
        let n = f32x4_sub(n, self.magic);
        let t = madd(n, self.minus_ln2_hi, d);
        let t = madd(n, self.minus_ln2_lo, t);
        let c = &self.c;
        let t2 = f32x4_mul(t, t);
        let lo = madd(c[3], t, c[4]);
        let hi = madd(c[1], t, c[2]);
        let hi = madd(c[0], t2, hi);
        let p = madd(hi, t2, lo);
        let f = madd(f32x4_mul(t, s), p, s);
        if RELAXED {
            // Zero where 2^n has left the normal range and `f` is garbage;
            // a compare, which leaves a NaN `f` as is.
            v128_andnot(f, f32x4_lt(d, self.lowest))
        } else {
            f
        }
    }
}

/// The relaxed-SIMD build (`madd` is `f32x4.relaxed_madd` there).
const RELAXED: bool = cfg!(fusegraph_relaxed_madd);

/// `a * b + c` with two roundings: SIMD128 has no fused multiply-add.
#[cfg(not(fusegraph_relaxed_madd))]
#[inline(always)]
fn madd(a: v128, b: v128, c: v128) -> v128 {
    f32x4_add(f32x4_mul(a, b), c)
}

/// `a * b + c` as one `f32x4.relaxed_madd`: fused, or mul + add where the
/// engine or CPU has no FMA. Either is within the exponential's error.
#[cfg(fusegraph_relaxed_madd)]
#[inline(always)]
fn madd(a: v128, b: v128, c: v128) -> v128 {
    // Inlines into `block`, which enables the feature. (Wasm target
    // features are safe to call: a module without them does not validate.)
    f32x4_relaxed_madd(a, b, c)
}
