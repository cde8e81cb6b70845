//! Softmax over the last axis of an f32 tensor as one loop nest per row,
//! the way XNNPACK and oneDNN write it: a max pass, one pass that stores
//! `exp(x - max)` and sums it, and a pass that scales by `1 / sum`.
//!
//! The general row kernel (`reduce.rs`) runs the same expression through
//! the chunk interpreter: a buffer per node, a loop per op and a few hundred
//! nanoseconds of bookkeeping per row, which made softmax over many short
//! rows (8192×128) cost three times what it does here. The operations and
//! their order per element are the same as the interpreter's (the same
//! `exp_f32`, the same `* (1 / sum)`), so both paths agree to rounding of
//! the sum.

use crate::backend::cpu::fastmath::{exp_f32_with, ExpConsts};
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
use crate::backend::cpu::fastmath::{exp_nonpositive_with, ExpNonPositiveConsts};
use crate::backend::cpu::par::{for_blocks, threads};
use crate::backend::cpu::reduce::Acc;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use crate::backend::cpu::softmax_simd128::{softmax_row, ExpMinusMax};
use crate::backend::cpu::CpuStorage;
use crate::graph::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::layout::Layout;
use crate::schedule::kernel::{ExprNode, ReduceBody};

/// A row kernel recognised as `softmax(x, axis = -1)` over argument `arg`.
pub struct SoftmaxRows<'a> {
    arg: usize,
    access: &'a Layout,
}

/// Recognises the kernel `Tensor::softmax` fuses into: stages
/// `[max(x), sum(exp(x - s0))]`, output `exp(x - s0) * (1 / s1)`, reduced
/// over the last axis only, with `x` an f32 load whose rows are contiguous.
pub fn recognise(r: &ReduceBody) -> Option<SoftmaxRows<'_>> {
    let nodes = &r.expr.nodes;
    let last = r.shape.len().checked_sub(1)?;
    if !r.out_full || r.axes != [last] || r.stages.len() != 2 {
        return None;
    }
    if r.expr.dtypes.iter().any(|&d| d != crate::dtype::DType::F32) {
        return None;
    }
    let (max, sum) = (&r.stages[0], &r.stages[1]);
    if max.op != ReduceOp::Max || sum.op != ReduceOp::Sum {
        return None;
    }
    let ExprNode::Load { arg, access } = &nodes[max.value] else {
        return None;
    };
    if r.shape[last] > 1 && access.strides[last] != 1 {
        return None;
    }
    // sum's value: exp(x - s0), over the same load node (the DAG is deduplicated).
    let exp = sum.value;
    let ExprNode::Unary(UnaryOp::Exp, shifted) = nodes[exp] else {
        return None;
    };
    let ExprNode::Binary(BinaryOp::Sub, x, s0) = nodes[shifted] else {
        return None;
    };
    if x != max.value || !matches!(nodes[s0], ExprNode::StageRef(0)) {
        return None;
    }
    // out: exp * (1 / s1), in either operand order.
    let ExprNode::Binary(BinaryOp::Mul, a, b) = nodes[r.out] else {
        return None;
    };
    let recip = match (a == exp, b == exp) {
        (true, false) => b,
        (false, true) => a,
        _ => return None,
    };
    let ExprNode::Binary(BinaryOp::Div, one, s1) = nodes[recip] else {
        return None;
    };
    let is_one = matches!(&nodes[one], ExprNode::Const(c) if c.value == 1.0);
    if !is_one || !matches!(nodes[s1], ExprNode::StageRef(1)) {
        return None;
    }
    Some(SoftmaxRows { arg: *arg, access })
}

impl SoftmaxRows<'_> {
    /// Runs the kernel when the input and output are f32 storages that the
    /// access fits in; `false` (nothing written) sends the caller to the
    /// general row kernel.
    pub fn run(&self, r: &ReduceBody, args: &[&CpuStorage], out: &mut CpuStorage) -> bool {
        let (Some(CpuStorage::F32(x)), CpuStorage::F32(out)) = (args.get(self.arg), out) else {
            return false;
        };
        let row_len = r.row_len();
        let outer = &r.shape[..r.shape.len() - 1];
        let n_rows: usize = outer.iter().product();
        if n_rows * row_len != out.len() || self.access.check_bounds("softmax", x.len()).is_err() {
            return false;
        }
        // A few very long rows: the general kernel splits each row across
        // threads, which this one does not.
        if n_rows < threads() && row_len >= 1 << 22 {
            return false;
        }
        if row_len == 0 {
            return true;
        }
        let strides = &self.access.strides[..outer.len()];
        let base = self.access.offset as isize;
        // Tasks of at least 16K elements, as the general row kernel uses.
        let rows_per_task = (16 * 1024 / row_len).clamp(1, 1024);
        for_blocks(out, rows_per_task * row_len, |t, block| {
            let mut rows = RowStarts::new(outer, strides, base, t * rows_per_task);
            let exp = ExpMinusMax::new();
            for row_out in block.chunks_exact_mut(row_len) {
                let start = rows.next_start();
                softmax_row(&x[start..start + row_len], row_out, &exp);
            }
        });
        true
    }
}

/// The start offsets of consecutive rows, walked like an odometer: one
/// division per outer axis for the first row of a task, then additions
/// (a division per axis per row was about 3% of a 128-element row on
/// wasm32).
struct RowStarts<'a> {
    outer: &'a [usize],
    strides: &'a [isize],
    coords: Vec<usize>,
    start: isize,
}

impl<'a> RowStarts<'a> {
    fn new(outer: &'a [usize], strides: &'a [isize], base: isize, first_row: usize) -> Self {
        let mut coords = vec![0usize; outer.len()];
        let mut rem = first_row;
        let mut start = base;
        for k in (0..outer.len()).rev() {
            coords[k] = rem % outer[k];
            rem /= outer[k];
            start += coords[k] as isize * strides[k];
        }
        RowStarts {
            outer,
            strides,
            coords,
            start,
        }
    }

    /// This row's start; then steps to the next row.
    fn next_start(&mut self) -> usize {
        let here = self.start as usize;
        for k in (0..self.outer.len()).rev() {
            self.coords[k] += 1;
            self.start += self.strides[k];
            if self.coords[k] < self.outer[k] {
                break;
            }
            self.start -= self.coords[k] as isize * self.strides[k];
            self.coords[k] = 0;
        }
        here
    }
}

/// One row: `out = exp(x - max(x)) * (1 / sum)`.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn softmax_row(x: &[f32], out: &mut [f32], exp: &ExpMinusMax) {
    let m = row_max(x);
    if !m.is_finite() {
        return softmax_row_nonfinite_max(x, out, m);
    }
    let scale = 1.0 / exp.store_and_sum(x, out, m);
    for o in out.iter_mut() {
        *o *= scale;
    }
}

/// A row whose max `m` is NaN (NaN in the row) or infinite (+inf, or a row
/// of -inf). A finite max puts every `x - m` in [-inf, 0], where the
/// shorter exponential holds; here the full-range one propagates the NaNs.
pub(super) fn softmax_row_nonfinite_max(x: &[f32], out: &mut [f32], m: f32) {
    let k = ExpConsts::opaque();
    let scale = 1.0 / store_exp_and_sum(x, out, |v| exp_f32_with(v - m, &k));
    for o in out.iter_mut() {
        *o *= scale;
    }
}

/// `out = exp(x - m)` for the rows of one task (the portable twin of
/// `softmax_simd128::ExpMinusMax`).
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
struct ExpMinusMax {
    k: ExpNonPositiveConsts,
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
impl ExpMinusMax {
    fn new() -> Self {
        ExpMinusMax {
            k: ExpNonPositiveConsts::opaque(),
        }
    }

    /// `out = exp(x - m)` for a finite `m`, and the sum of `out`.
    fn store_and_sum(&self, x: &[f32], out: &mut [f32], m: f32) -> f32 {
        store_exp_and_sum(x, out, |v| exp_nonpositive_with(v - m, &self.k))
    }
}

/// `out = f(x)` and the sum of `out`, in blocks of 4096 elements: a map
/// loop (which LLVM vectorises; fusing the sum into it left the loop
/// scalar on SIMD128), then the general kernel's `Acc::Sum` over the block
/// while it is still in L1 (8 f32 lanes, added to an f64 total).
#[inline(always)]
fn store_exp_and_sum(x: &[f32], out: &mut [f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut sum = Acc::<f32>::new(ReduceOp::Sum);
    for (xs, os) in x.chunks(4096).zip(out.chunks_mut(4096)) {
        for (o, &v) in os.iter_mut().zip(xs) {
            *o = f(v);
        }
        sum.fold(os, 0);
    }
    sum.value()
}

/// The row's maximum; NaN when any element is NaN (then every output is NaN,
/// as in the general kernel and PyTorch).
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn row_max(x: &[f32]) -> f32 {
    let mut max = Acc::<f32>::new(ReduceOp::Max);
    max.fold(x, 0);
    max.value()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(x: &[f32]) -> Vec<f64> {
        let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let e: Vec<f64> = x.iter().map(|&v| (v as f64 - m).exp()).collect();
        let s: f64 = e.iter().sum();
        e.iter().map(|v| v / s).collect()
    }

    #[test]
    fn rows_of_every_remainder_length_match_f64() {
        for n in [1usize, 3, 7, 8, 9, 17, 100, 4097, 9000] {
            let x: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.31)
                .collect();
            let mut out = vec![0.0; n];
            softmax_row(&x, &mut out, &ExpMinusMax::new());
            for (got, want) in out.iter().zip(reference(&x)) {
                let err = (*got as f64 - want).abs();
                assert!(
                    err <= 1e-6 * want.max(1e-30) + 1e-12,
                    "n={n}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn nan_and_infinite_rows_follow_the_general_kernel() {
        let exp = ExpMinusMax::new();
        let mut out = vec![0.0; 10];
        let mut x = vec![0.5f32; 10];
        x[9] = f32::NAN;
        softmax_row(&x, &mut out, &exp);
        assert!(out.iter().all(|v| v.is_nan()));
        // All -inf: max is -inf, x - max is NaN (as in the interpreter).
        softmax_row(&[f32::NEG_INFINITY; 10], &mut out, &exp);
        assert!(out.iter().all(|v| v.is_nan()));
        // One +inf among finite values: inf - inf is NaN there, the rest 0 / NaN.
        let mut x = vec![1.0f32; 10];
        x[2] = f32::INFINITY;
        softmax_row(&x, &mut out, &exp);
        assert!(out[2].is_nan());
    }
}
