//! Separable resampling: one pass along the rows axis, one along the
//! columns axis, each output sample a weighted sum over its tap run.
//!
//! Two implementations of the same definition:
//! - on the CPU direct f32 loops over the tap tables
//!   ([`super::resample_cpu`]: the hot path of edge workers, no
//!   per-element graph work, the rounding to u8 done in the last pass);
//! - on every other device a graph pattern the backends already run:
//!   `index_select` of the padded tap indices, a multiply by the weight
//!   table and a sum over the tap axis.
//!
//! Both keep the intermediate in f32 (no rounding between passes) and
//! return f32; [`super::to_u8`] rounds at the very end so the clamp and cast
//! fuse with whatever elementwise work follows.

use super::resample_cpu::{resample_cpu, Finish, Out};
use super::taps::Taps;
use super::{dims, dims_u8, invalid, to_u8};
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
    resample_u8(img, &filter.taps(h, height), &filter.taps(w, width))
}

/// [`resample`] rounded back to a `u8` image (`to_u8`), in the last pass
/// on the CPU.
pub fn resample_u8(x: &Tensor, rows: &Taps, cols: &Taps) -> Result<Tensor> {
    if *x.device() == Device::Cpu {
        resample_on_cpu::<u8>(x, rows, cols, Finish::U8)
    } else {
        to_u8(&resample(x, rows, cols)?)
    }
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
    if *x.device() == Device::Cpu {
        // Checks the shape and the taps itself.
        return resample_on_cpu::<f32>(x, rows, cols, Finish::F32);
    }
    let (h, w, _) = dims("image.resample", x)?;
    check_taps(rows, h, "rows")?;
    check_taps(cols, w, "cols")?;
    resample_graph(x, rows, cols)
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

/// Runs the CPU passes on a host tensor (u8 read as is, anything else as f32).
pub(super) fn resample_on_cpu<O: Out>(
    x: &Tensor,
    rows: &Taps,
    cols: &Taps,
    finish: Finish<'_>,
) -> Result<Tensor> {
    let (h, w, c) = dims("image.resample", x)?;
    check_taps(rows, h, "rows")?;
    check_taps(cols, w, "cols")?;
    let out = match x.dtype() {
        DType::U8 => {
            x.with_slice::<u8, _>(|s| resample_cpu::<u8, O>(s, (h, w, c), rows, cols, finish))?
        }
        _ => x
            .cast(DType::F32)?
            .with_slice::<f32, _>(|s| resample_cpu::<f32, O>(s, (h, w, c), rows, cols, finish))?,
    };
    Tensor::from_vec(out, vec![rows.n_out(), cols.n_out(), c], &Device::Cpu)
}
