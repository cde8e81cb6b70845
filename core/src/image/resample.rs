//! Separable resampling: one pass along the rows axis, one along the
//! columns axis, each output sample a weighted sum over its tap run.
//!
//! Two implementations of the same definition:
//! - on the CPU a direct f32 loop over the tap table (the hot path of edge
//!   workers: no per-element graph work; the vertical pass runs over whole
//!   contiguous rows so it vectorises, SIMD128 in wasm);
//! - on every other device a graph pattern the backends already run:
//!   `index_select` of the padded tap indices, a multiply by the weight
//!   table and a sum over the tap axis.
//!
//! Both keep the intermediate in f32 (no rounding between passes) and
//! return f32; [`super::to_u8`] rounds at the very end so the clamp and cast
//! fuse with whatever elementwise work follows.

use super::taps::Taps;
use super::{dims, dims_u8, invalid, to_u8};
use crate::backend::cpu::par::for_blocks;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Resize filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Filter {
    Nearest,
    Bilinear,
    #[default]
    Lanczos3,
}

impl Filter {
    pub fn parse(s: &str) -> Option<Filter> {
        match s.to_ascii_lowercase().as_str() {
            "nearest" => Some(Filter::Nearest),
            "bilinear" | "linear" | "triangle" => Some(Filter::Bilinear),
            "lanczos3" | "lanczos" => Some(Filter::Lanczos3),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Filter::Nearest => "nearest",
            Filter::Bilinear => "bilinear",
            Filter::Lanczos3 => "lanczos3",
        }
    }

    /// The tap table resampling `n_in` samples to `n_out`.
    pub fn taps(self, n_in: usize, n_out: usize) -> Taps {
        match self {
            Filter::Nearest => Taps::nearest(n_in, n_out),
            Filter::Bilinear => Taps::bilinear(n_in, n_out),
            Filter::Lanczos3 => Taps::lanczos3(n_in, n_out),
        }
    }
}

/// Largest output side accepted by [`resize`] (keeps a typo from asking for
/// terabytes).
pub const MAX_OUTPUT_SIDE: usize = 65_535;

/// Resizes a `u8` image to `width` × `height` with `filter`.
pub fn resize(img: &Tensor, width: usize, height: usize, filter: Filter) -> Result<Tensor> {
    let (h, w, _) = dims_u8("image.resize", img)?;
    for (what, v) in [("width", width), ("height", height)] {
        if v == 0 || v > MAX_OUTPUT_SIDE {
            return Err(invalid(
                "image.resize",
                what,
                "an integer in 1..=65535",
                v.to_string(),
            ));
        }
    }
    if (h, w) == (height, width) {
        return Ok(img.clone());
    }
    if filter == Filter::Nearest {
        // Nearest is a pure gather: no arithmetic, stays u8.
        return gather_rows_cols(img, &Taps::nearest(h, height), &Taps::nearest(w, width));
    }
    to_u8(&resample(
        img,
        &filter.taps(h, height),
        &filter.taps(w, width),
    )?)
}

/// The output size that fits `width` and/or `height` keeping the aspect
/// ratio (a missing side follows the other, rounded, at least 1).
pub fn fit_size(h: usize, w: usize, width: Option<usize>, height: Option<usize>) -> (usize, usize) {
    match (width, height) {
        (Some(ow), Some(oh)) => (ow, oh),
        (Some(ow), None) => (
            ow,
            ((h as f64 * ow as f64 / w as f64).round() as usize).max(1),
        ),
        (None, Some(oh)) => (
            ((w as f64 * oh as f64 / h as f64).round() as usize).max(1),
            oh,
        ),
        (None, None) => (w, h),
    }
}

/// Applies `rows` along axis 0 and `cols` along axis 1 of an image tensor
/// (u8 or f32), returning f32 `[rows.n_out, cols.n_out, C]`.
pub fn resample(x: &Tensor, rows: &Taps, cols: &Taps) -> Result<Tensor> {
    let (h, w, _) = dims("image.resample", x)?;
    check_taps(rows, h, "rows")?;
    check_taps(cols, w, "cols")?;
    if *x.device() == Device::Cpu {
        resample_cpu(x, rows, cols)
    } else {
        resample_graph(x, rows, cols)
    }
}

fn check_taps(t: &Taps, n: usize, what: &'static str) -> Result<()> {
    let ok = t.n_in == n
        && t.start
            .iter()
            .zip(&t.len)
            .all(|(&s, &l)| l >= 1 && l <= t.width && s + l <= n);
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "image.resample",
            what,
            "a tap table built for this axis",
            format!("table for {} samples, axis has {n}", t.n_in),
        ))
    }
}

/// The device-generic form: gathers and weighted sums on the op graph.
pub fn resample_graph(x: &Tensor, rows: &Taps, cols: &Taps) -> Result<Tensor> {
    let x = x.cast(DType::F32)?;
    let y = resample_axis_graph(&x, 0, rows)?;
    resample_axis_graph(&y, 1, cols)
}

fn resample_axis_graph(x: &Tensor, axis: usize, taps: &Taps) -> Result<Tensor> {
    let dev = *x.device();
    let (n_out, k) = (taps.n_out(), taps.width);
    // Padded taps read their row's first input with weight 0.
    let mut index = Vec::with_capacity(n_out * k);
    for i in 0..n_out {
        for j in 0..k {
            let off = if j < taps.len[i] { j } else { 0 };
            index.push((taps.start[i] + off) as i32);
        }
    }
    let index = Tensor::from_vec(index, vec![n_out * k], &dev)?;
    let g = x.index_select(axis as isize, &index)?;
    let mut split = x.shape().to_vec();
    split.splice(axis..=axis, [n_out, k]);
    let mut wshape = vec![1; split.len()];
    wshape[axis] = n_out;
    wshape[axis + 1] = k;
    let weights = Tensor::from_vec(taps.weights.clone(), wshape, &dev)?;
    g.reshape(split)?
        .mul(&weights)?
        .sum(&[axis as isize + 1], false)
}

/// Nearest resize as two `index_select`s (any dtype, any device).
fn gather_rows_cols(x: &Tensor, rows: &Taps, cols: &Taps) -> Result<Tensor> {
    let dev = *x.device();
    let idx = |t: &Taps| {
        Tensor::from_vec(
            t.start.iter().map(|&s| s as i32).collect::<Vec<_>>(),
            vec![t.n_out()],
            &dev,
        )
    };
    x.index_select(0, &idx(rows)?)?.index_select(1, &idx(cols)?)
}

/// Samples the CPU loops read: u8 pixels or f32 intermediates.
trait Sample: Copy + Send + Sync + 'static {
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

fn resample_cpu(x: &Tensor, rows: &Taps, cols: &Taps) -> Result<Tensor> {
    let (h, w, c) = dims("image.resample", x)?;
    let (ho, wo) = (rows.n_out(), cols.n_out());
    // Pick the order that does less work; the column pass (strided by C,
    // harder to vectorise) is weighted double.
    let avg = |t: &Taps| t.len.iter().sum::<usize>() as f64 / t.n_out().max(1) as f64;
    let (kr, kc) = (avg(rows), avg(cols));
    let rows_first = (ho * w * c) as f64 * kr + 2.0 * (ho * wo * c) as f64 * kc;
    let cols_first = 2.0 * (h * wo * c) as f64 * kc + (ho * wo * c) as f64 * kr;
    let out = match x.dtype() {
        DType::U8 => x.contiguous()?.with_slice::<u8, _>(|s| {
            two_passes(s, h, w, c, rows, cols, rows_first <= cols_first)
        })?,
        _ => x
            .cast(DType::F32)?
            .contiguous()?
            .with_slice::<f32, _>(|s| {
                two_passes(s, h, w, c, rows, cols, rows_first <= cols_first)
            })?,
    };
    Tensor::from_vec(out, vec![ho, wo, c], &Device::Cpu)
}

fn two_passes<T: Sample>(
    src: &[T],
    h: usize,
    w: usize,
    c: usize,
    rows: &Taps,
    cols: &Taps,
    rows_first: bool,
) -> Vec<f32> {
    if rows_first {
        let mid = pass_rows(src, w * c, rows);
        pass_cols(&mid, rows.n_out(), w, c, cols)
    } else {
        let mid = pass_cols(src, h, w, c, cols);
        pass_rows(&mid, cols.n_out() * c, rows)
    }
}

/// Along axis 0: each output row is a weighted sum of whole input rows.
fn pass_rows<T: Sample>(src: &[T], row_len: usize, taps: &Taps) -> Vec<f32> {
    let mut out = vec![0f32; taps.n_out() * row_len];
    for_blocks(&mut out, row_len, |i, dst| {
        let s = taps.start[i];
        for (k, &wk) in taps.row(i).iter().enumerate() {
            let r = &src[(s + k) * row_len..(s + k + 1) * row_len];
            for (o, &v) in dst.iter_mut().zip(r) {
                *o += wk * v.f();
            }
        }
    });
    out
}

/// Along axis 1: within each row, output pixel `x` sums its tap run.
fn pass_cols<T: Sample>(src: &[T], h: usize, w: usize, c: usize, taps: &Taps) -> Vec<f32> {
    let wo = taps.n_out();
    let mut out = vec![0f32; h * wo * c];
    // Blocks of several rows keep threads busy without tiny tasks.
    let rows_per_block = (16_384 / (wo * c).max(1)).max(1);
    for_blocks(&mut out, rows_per_block * wo * c, |b, dst| {
        for (r, drow) in dst.chunks_mut(wo * c).enumerate() {
            let y = b * rows_per_block + r;
            let srow = &src[y * w * c..(y + 1) * w * c];
            match c {
                1 => cols_row::<T, 1>(srow, drow, taps),
                2 => cols_row::<T, 2>(srow, drow, taps),
                3 => cols_row::<T, 3>(srow, drow, taps),
                _ => cols_row::<T, 4>(srow, drow, taps),
            }
        }
    });
    out
}

#[inline(always)]
fn cols_row<T: Sample, const C: usize>(src: &[T], dst: &mut [f32], taps: &Taps) {
    for (x, px) in dst.chunks_exact_mut(C).enumerate() {
        let s = taps.start[x];
        let wts = taps.row(x);
        let run = &src[s * C..(s + wts.len()) * C];
        let mut acc = [0f32; C];
        for (p, &wk) in run.chunks_exact(C).zip(wts) {
            for (a, &v) in acc.iter_mut().zip(p) {
                *a += wk * v.f();
            }
        }
        px.copy_from_slice(&acc);
    }
}
