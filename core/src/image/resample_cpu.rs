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
    (crate::dtype::clamp_u8_range(v) + 0.5) as i32 as u8
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
        let mid: Vec<f32> = run_pass(ho, w * c, Finish::F32, 0, |i, _, d| {
            rows_row(src, w * c, rows, i, &mut d[..w * c])
        });
        run_pass(ho, wo * c, finish, w * c + 1, |y, row, d| {
            cols_row(&mid[y * w * c..(y + 1) * w * c], row, c, cols, d)
        })
    } else {
        let mid: Vec<f32> = run_pass(h, wo * c, Finish::F32, w * c + 1, |y, row, d| {
            cols_row(&src[y * w * c..(y + 1) * w * c], row, c, cols, d)
        });
        run_pass(ho, wo * c, finish, 0, |i, _, d| {
            rows_row(&mid, wo * c, rows, i, &mut d[..wo * c])
        })
    }
}

/// Fills `n_rows` rows of `row_len` outputs: `row(i, scratch, sums)`
/// computes row `i`'s f32 sums into a scratch row of `row_len + 1` (the
/// last a spill lane for 4-lane stores), with `scratch_len` more f32 of
/// scratch space of its own, and `finish` then writes the sums out.
fn run_pass<O: Out>(
    n_rows: usize,
    row_len: usize,
    finish: Finish<'_>,
    scratch_len: usize,
    row: impl Fn(usize, &mut [f32], &mut [f32]) + Sync + Send,
) -> Vec<O> {
    let mut out = vec![O::default(); n_rows * row_len];
    // Blocks of several rows keep threads busy without tiny tasks.
    let rows_per_block = (16_384 / row_len.max(1)).max(1);
    for_blocks(&mut out, rows_per_block * row_len, |b, dst| {
        let mut sums = vec![0f32; row_len + 1];
        let mut scratch = vec![0f32; scratch_len];
        for (r, drow) in dst.chunks_mut(row_len).enumerate() {
            let i = b * rows_per_block + r;
            row(i, &mut scratch, &mut sums);
            O::finish(finish, i * row_len, &sums[..row_len], drow);
        }
    });
    out
}

/// Output row `i` of the pass along axis 0: a weighted sum of whole input
/// rows, one contiguous multiply-add sweep per tap (vectorised; the output
/// row stays in L1 between sweeps).
fn rows_row<T: Sample>(src: &[T], row_len: usize, taps: &Taps, i: usize, dst: &mut [f32]) {
    let s = taps.start[i];
    let wts = taps.row(i);
    let rows = &src[s * row_len..(s + wts.len()) * row_len];
    let mut rows = rows.chunks_exact(row_len).zip(wts);
    if let Some((r, &w0)) = rows.next() {
        for (o, &v) in dst.iter_mut().zip(r) {
            *o = w0 * v.f();
        }
    }
    for (r, &wk) in rows {
        for (o, &v) in dst.iter_mut().zip(r) {
            *o += wk * v.f();
        }
    }
}

/// Output row of the pass along axis 1 from the input row `src` (pixels of
/// `c` channels), read through `row`: `src` as f32 plus one padding lane,
/// so every pixel can be loaded as one 4-lane vector. `dst` has one spill
/// lane past the row.
fn cols_row<T: Sample>(src: &[T], row: &mut [f32], c: usize, taps: &Taps, dst: &mut [f32]) {
    let row = &mut row[..src.len() + 1];
    for (r, &v) in row.iter_mut().zip(src) {
        *r = v.f();
    }
    match c {
        3 => cols_row_vec::<3>(row, taps, dst),
        4 => cols_row_vec::<4>(row, taps, dst),
        _ => cols_row_scalar(&row[..src.len()], c, taps, &mut dst[..taps.n_out() * c]),
    }
}

/// RGB and RGBA: one 4-lane multiply-add per tap, and one 4-lane store per
/// pixel. For RGB the fourth lane holds the next pixel's first channel (or
/// the padding); its sum lands where the next pixel's store overwrites it,
/// or in `dst`'s spill lane, so all four lanes stay one vector.
#[inline(always)]
fn cols_row_vec<const C: usize>(row: &[f32], taps: &Taps, dst: &mut [f32]) {
    for x in 0..taps.n_out() {
        let s = taps.start[x] * C;
        let wts = taps.row(x);
        let run = &row[s..s + (wts.len() - 1) * C + 4];
        let mut acc = [0f32; 4];
        for (k, &wk) in wts.iter().enumerate() {
            let p: &[f32; 4] = run[k * C..k * C + 4].try_into().unwrap_or(&[0.0; 4]);
            for (a, &v) in acc.iter_mut().zip(p) {
                *a += wk * v;
            }
        }
        dst[x * C..x * C + 4].copy_from_slice(&acc);
    }
}

/// Grey and grey + alpha: one accumulator per channel.
fn cols_row_scalar(row: &[f32], c: usize, taps: &Taps, dst: &mut [f32]) {
    for (x, px) in dst.chunks_exact_mut(c).enumerate() {
        let s = taps.start[x] * c;
        let wts = taps.row(x);
        for (ch, o) in px.iter_mut().enumerate() {
            *o = wts
                .iter()
                .enumerate()
                .fold(0.0, |a, (k, &wk)| a + wk * row[s + k * c + ch]);
        }
    }
}
