//! The CPU form of [`super::resample`]: two direct f32 passes over the tap
//! tables, the hot path of an edge worker's image request.
//!
//! - The pass along axis 0 sums whole input rows, so it runs over long
//!   contiguous slices and vectorises (SIMD128 in wasm).
//! - The pass along axis 1 keeps one accumulator per pixel; for three and
//!   four channels it is a 4-lane vector (a pixel plus, for RGB, one lane of
//!   the next pixel that is summed and dropped), one vector multiply-add per
//!   tap instead of one scalar per channel.
//! - The last pass hands each finished row of f32 sums to a [`Finish`] while
//!   it is still in cache, so rounding to u8 (and the unsharp mask) costs no
//!   extra pass over memory and no graph kernel.

use super::taps::Taps;
use crate::backend::cpu::par::for_blocks;

/// Samples the passes read: u8 pixels or f32 intermediates.
pub trait Sample: Copy + Send + Sync + 'static {
    fn f(self) -> f32;
}
impl Sample for u8 {
    #[inline(always)]
    fn f(self) -> f32 {
        self as f32
    }
}
impl Sample for f32 {
    #[inline(always)]
    fn f(self) -> f32 {
        self
    }
}

/// What the last pass writes for each f32 sum.
#[derive(Clone, Copy)]
pub enum Finish<'a> {
    /// The sums themselves (f32 output).
    F32,
    /// Rounded to u8 as [`super::to_u8`] does.
    U8,
    /// The unsharp mask `x + amount * (x - sum)` of the image `x` the sums
    /// blurred (same shape as the output), rounded to u8; the same f32
    /// operations in the same order as the graph form of [`super::sharpen`].
    Unsharp { x: &'a [u8], amount: f32 },
}

/// [`super::to_u8`] of one value: clamp to 0..=255 (NaN to 0), add one half,
/// truncate.
#[inline(always)]
fn round_u8(v: f32) -> u8 {
    (v.max(0.0).min(255.0) + 0.5) as i32 as u8
}

/// Output elements of a finished resample.
pub trait Out: crate::dtype::Element + Default {
    fn finish(f: Finish<'_>, start: usize, sums: &[f32], out: &mut [Self]);
}
impl Out for f32 {
    fn finish(_: Finish<'_>, _: usize, sums: &[f32], out: &mut [f32]) {
        out.copy_from_slice(sums);
    }
}
impl Out for u8 {
    fn finish(f: Finish<'_>, start: usize, sums: &[f32], out: &mut [u8]) {
        match f {
            Finish::Unsharp { x, amount } => {
                let x = &x[start..start + out.len()];
                for ((o, &s), &xv) in out.iter_mut().zip(sums).zip(x) {
                    let xv = xv as f32;
                    *o = round_u8(xv + (xv - s) * amount);
                }
            }
            _ => {
                for (o, &s) in out.iter_mut().zip(sums) {
                    *o = round_u8(s);
                }
            }
        }
    }
}

/// Resamples `src` (`[h, w, c]`, row-major) by `rows` along axis 0 and
/// `cols` along axis 1, in whichever order does less work.
pub fn resample_cpu<T: Sample, O: Out>(
    src: &[T],
    (h, w, c): (usize, usize, usize),
    rows: &Taps,
    cols: &Taps,
    finish: Finish<'_>,
) -> Vec<O> {
    let (ho, wo) = (rows.n_out(), cols.n_out());
    // The column pass (strided by C) is weighted double.
    let avg = |t: &Taps| t.len.iter().sum::<usize>() as f64 / t.n_out().max(1) as f64;
    let (kr, kc) = (avg(rows), avg(cols));
    let rows_first = (ho * w * c) as f64 * kr + 2.0 * (ho * wo * c) as f64 * kc;
    let cols_first = 2.0 * (h * wo * c) as f64 * kc + (ho * wo * c) as f64 * kr;
    if rows_first <= cols_first {
        let mid: Vec<f32> = run_pass(ho, w * c, Finish::F32, |i, d| {
            rows_row(src, w * c, rows, i, d)
        });
        run_pass(ho, wo * c, finish, |y, d| {
            cols_row(&mid, y * w * c, c, cols, d)
        })
    } else {
        let mid: Vec<f32> = run_pass(h, wo * c, Finish::F32, |y, d| {
            cols_row(src, y * w * c, c, cols, d)
        });
        run_pass(ho, wo * c, finish, |i, d| {
            rows_row(&mid, wo * c, rows, i, d)
        })
    }
}

/// Fills `n_rows` rows of `row_len` outputs: `row(i, sums)` computes row
/// `i`'s f32 sums into a scratch row, which `finish` then writes out.
fn run_pass<O: Out>(
    n_rows: usize,
    row_len: usize,
    finish: Finish<'_>,
    row: impl Fn(usize, &mut [f32]) + Sync + Send,
) -> Vec<O> {
    let mut out = vec![O::default(); n_rows * row_len];
    // Blocks of several rows keep threads busy without tiny tasks.
    let rows_per_block = (16_384 / row_len.max(1)).max(1);
    for_blocks(&mut out, rows_per_block * row_len, |b, dst| {
        let mut sums = vec![0f32; row_len];
        for (r, drow) in dst.chunks_mut(row_len).enumerate() {
            let i = b * rows_per_block + r;
            row(i, &mut sums);
            O::finish(finish, i * row_len, &sums, drow);
        }
    });
    out
}

/// Output row `i` of the pass along axis 0: a weighted sum of whole input
/// rows, 8 outputs at a time with the sum kept in registers across the taps
/// (one store per output rather than one per tap).
fn rows_row<T: Sample>(src: &[T], row_len: usize, taps: &Taps, i: usize, dst: &mut [f32]) {
    const L: usize = 8;
    let s = taps.start[i];
    let wts = taps.row(i);
    let rows = &src[s * row_len..(s + wts.len()) * row_len];
    let full = row_len / L * L;
    for (jb, out) in dst[..full].chunks_exact_mut(L).enumerate() {
        let j = jb * L;
        let mut acc = [0f32; L];
        for (k, &wk) in wts.iter().enumerate() {
            let r = &rows[k * row_len + j..k * row_len + j + L];
            for (a, &v) in acc.iter_mut().zip(r) {
                *a += wk * v.f();
            }
        }
        out.copy_from_slice(&acc);
    }
    for (j, o) in dst.iter_mut().enumerate().skip(full) {
        *o = wts
            .iter()
            .enumerate()
            .fold(0.0, |a, (k, &wk)| a + wk * rows[k * row_len + j].f());
    }
}

/// Output row of the pass along axis 1, from the input row starting at
/// `src[base]` (pixels of `c` channels). `src` is the whole image, so the
/// 4-lane loads may read past the row's end into the next row.
fn cols_row<T: Sample>(src: &[T], base: usize, c: usize, taps: &Taps, dst: &mut [f32]) {
    match c {
        1 => cols_row_n::<T, 1>(src, base, taps, dst),
        2 => cols_row_n::<T, 2>(src, base, taps, dst),
        3 => cols_row_n::<T, 3>(src, base, taps, dst),
        _ => cols_row_n::<T, 4>(src, base, taps, dst),
    }
}

#[inline(always)]
fn cols_row_n<T: Sample, const C: usize>(src: &[T], base: usize, taps: &Taps, dst: &mut [f32]) {
    for (x, px) in dst.chunks_exact_mut(C).enumerate() {
        let s = base + taps.start[x] * C;
        let wts = taps.row(x);
        if C >= 3 && s + (wts.len() - 1) * C + 4 <= src.len() {
            // One 4-lane multiply-add per tap; for RGB the fourth lane
            // reads the next pixel's first channel and is dropped.
            let mut acc = [0f32; 4];
            for (k, &wk) in wts.iter().enumerate() {
                let p = &src[s + k * C..s + k * C + 4];
                for (j, a) in acc.iter_mut().enumerate() {
                    *a += wk * p[j].f();
                }
            }
            px.copy_from_slice(&acc[..C]);
        } else {
            let run = &src[s..s + wts.len() * C];
            let mut acc = [0f32; C];
            for (p, &wk) in run.chunks_exact(C).zip(wts) {
                for (a, &v) in acc.iter_mut().zip(p) {
                    *a += wk * v.f();
                }
            }
            px.copy_from_slice(&acc);
        }
    }
}
