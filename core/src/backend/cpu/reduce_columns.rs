//! Column kernels: row kernels that keep the domain's last axis, which every
//! load reads with stride 1 or broadcasts. Batch norm's per-channel
//! statistics of NHWC activations and the window sums of a convolution's
//! input gradient are of this kind. The row kernel would walk each output's
//! row with the channel count as stride (a cache line per element) and
//! evaluate a chunk per short row; here the outputs that differ only in the
//! last axis (the lanes) share one "row" over `[reduced..., last]`, read in
//! memory order, and each stage folds every position into its lane's
//! accumulator. Stage values are per lane, so later stages and the output
//! read them through [`Positions::stage`].

use crate::backend::cpu::access::store_typed;
use crate::backend::cpu::compute::Compute;
use crate::backend::cpu::eval::{eval_chunk, Positions, Scratch};
use crate::backend::cpu::map::CHUNK;
use crate::backend::cpu::par::{map_range, threads};
use crate::backend::cpu::reduce::{
    fold_row, kept_strides, load_kept_strides, store_full, RowPos, RowWalks, SyncPtr,
};
use crate::backend::cpu::CpuStorage;
use crate::dtype::Element;
use crate::graph::op::ReduceOp;
use crate::layout::Layout;
use crate::schedule::kernel::{ExprId, ReduceBody};

/// Fewer lanes than this leave the per-lane loops too short to vectorise.
const MIN_LANES: usize = 8;
/// A group's row is split across threads from this many positions on, when
/// there are fewer groups than threads.
const SPLIT_SPAN: usize = 1 << 16;

/// True when `r` runs faster as a column kernel: it keeps the last axis,
/// which every load reads with stride 1 (or 0), and has no argmax (whose
/// first-index rule wants the row order).
pub(super) fn applies(r: &ReduceBody) -> bool {
    !r.axes.is_empty()
        && r.keeps_contiguous_last_axis()
        && r.shape.last().is_some_and(|&d| d >= MIN_LANES)
        && r.stages.iter().all(|s| s.op != ReduceOp::ArgMax)
}

/// One accumulator per lane.
enum LaneAcc<T> {
    /// Sums in f64, as the row kernel's totals.
    Sum(Vec<f64>),
    Max(Vec<T>),
    Min(Vec<T>),
}

impl<T: Compute> LaneAcc<T> {
    fn new(op: ReduceOp, lanes: usize) -> Self {
        match op {
            ReduceOp::Sum => LaneAcc::Sum(vec![0.0; lanes]),
            ReduceOp::Min => LaneAcc::Min(vec![T::INF; lanes]),
            // `applies` excludes argmax.
            ReduceOp::Max | ReduceOp::ArgMax => LaneAcc::Max(vec![T::NEG_INF; lanes]),
        }
    }

    /// Folds positions whose lanes run 0..lanes, row after row.
    fn fold(&mut self, vals: &[T]) {
        match self {
            LaneAcc::Sum(acc) => {
                for row in vals.chunks(acc.len()) {
                    for (a, &v) in acc.iter_mut().zip(row) {
                        *a += v.to_f64();
                    }
                }
            }
            // NaN sticks: a NaN value replaces the lane's value, and nothing
            // compares greater (or less) than a NaN lane value.
            LaneAcc::Max(acc) => {
                for row in vals.chunks(acc.len()) {
                    for (a, &v) in acc.iter_mut().zip(row) {
                        if v > *a || v.is_nan() {
                            *a = v;
                        }
                    }
                }
            }
            LaneAcc::Min(acc) => {
                for row in vals.chunks(acc.len()) {
                    for (a, &v) in acc.iter_mut().zip(row) {
                        if v < *a || v.is_nan() {
                            *a = v;
                        }
                    }
                }
            }
        }
    }

    /// Combines with the accumulator of a later segment of the rows.
    fn merge(mut self, later: LaneAcc<T>) -> LaneAcc<T> {
        match (&mut self, later) {
            (LaneAcc::Sum(a), LaneAcc::Sum(b)) => a.iter_mut().zip(b).for_each(|(x, y)| *x += y),
            (LaneAcc::Max(a), LaneAcc::Max(b)) => self_fold_values(a, &b, |x, y| y > x),
            (LaneAcc::Min(a), LaneAcc::Min(b)) => self_fold_values(a, &b, |x, y| y < x),
            _ => {}
        }
        self
    }

    fn values(self) -> Vec<T> {
        match self {
            LaneAcc::Sum(a) => a.into_iter().map(T::from_f64).collect(),
            LaneAcc::Max(a) | LaneAcc::Min(a) => a,
        }
    }
}

/// `a[i] = b[i]` where `b[i]` wins (`better`) or is NaN, unless `a[i]` is NaN.
fn self_fold_values<T: Compute>(a: &mut [T], b: &[T], better: impl Fn(T, T) -> bool) {
    for (x, &y) in a.iter_mut().zip(b) {
        if !x.is_nan() && (better(*x, y) || y.is_nan()) {
            *x = y;
        }
    }
}

/// A row's positions plus the per-lane values of the finished stages.
struct LanePos<'a, T> {
    row: RowPos<'a>,
    stage_vals: &'a [Vec<T>],
}

impl<T: Compute> Positions<T> for LanePos<'_, T> {
    fn load(&self, node: ExprId, out: &mut [T]) {
        self.row.load(node, out)
    }
    fn coord(&self, axis: usize, out: &mut [T]) {
        Positions::<T>::coord(&self.row, axis, out)
    }
    fn linear(&self, out: &mut [u32]) {
        Positions::<T>::linear(&self.row, out)
    }
    fn direct(&self, node: ExprId, len: usize) -> Option<&[T]> {
        self.row.direct(node, len)
    }
    fn stage(&self, s: usize, out: &mut [T]) -> bool {
        // Chunks start at a multiple of the lane count.
        let lanes = &self.stage_vals[s];
        for row in out.chunks_mut(lanes.len()) {
            row.copy_from_slice(&lanes[..row.len()]);
        }
        true
    }
}

/// Runs `r` as a column kernel (see [`applies`]) into `out`.
pub(super) fn run_columns<T: Compute, E: Element>(
    r: &ReduceBody,
    args: &[&CpuStorage],
    out: &mut [E],
) {
    let rank = r.shape.len();
    let last = rank - 1;
    let lanes = r.shape[last];
    // The row of a group: the reduced axes, then the lanes (domain order).
    let axes: Vec<usize> = r.axes.iter().copied().chain([last]).collect();
    let row_shape: Vec<usize> = axes.iter().map(|&a| r.shape[a]).collect();
    let outer_shape: Vec<usize> = (0..rank)
        .filter(|a| !axes.contains(a))
        .map(|a| r.shape[a])
        .collect();
    let groups: usize = outer_shape.iter().product();
    let span: usize = row_shape.iter().product();
    let chunk = (CHUNK / lanes).max(1) * lanes;
    let stage_live: Vec<Vec<ExprId>> = r
        .stages
        .iter()
        .map(|s| r.expr.reachable(&[s.value]))
        .collect();
    let out_live = r.expr.reachable(&[r.out]);
    let domain = Layout::contiguous(&r.shape);
    let load_kept = load_kept_strides(r, &axes);
    let lin_kept = kept_strides(&domain, &axes);
    let ptr = SyncPtr(out.as_mut_ptr());
    let out_len = out.len();
    let split = groups < threads() && span >= SPLIT_SPAN;
    let one_chunk = span <= chunk && !split;
    let groups_per_task = if split {
        1
    } else {
        (16 * 1024 / span.max(1)).clamp(1, 1024)
    };
    map_range(groups.div_ceil(groups_per_task), |t| {
        let mut scratch = Scratch::<T>::with_stages(&r.expr, false);
        let mut outer = vec![0usize; outer_shape.len()];
        let mut rw = RowWalks::new(r, &axes, &domain, outer_shape.len());
        let mut stage_vals: Vec<Vec<T>> = Vec::with_capacity(r.stages.len());
        for g in t * groups_per_task..((t + 1) * groups_per_task).min(groups) {
            rw.move_to(&load_kept, &lin_kept, g, &outer_shape, &mut outer);
            let (walks, lin_walk) = (&rw.walks, &rw.lin);
            let row_at = |start: usize| RowPos {
                body: r,
                axes: &axes,
                args,
                walks,
                lin_walk,
                outer_coords: &outer,
                row_shape: &row_shape,
                start,
            };
            stage_vals.clear();
            scratch.new_chunk();
            for (s, stage) in r.stages.iter().enumerate() {
                let fold_range = |lo: usize, hi: usize, scratch: &mut Scratch<T>| {
                    let mut acc = LaneAcc::<T>::new(stage.op, lanes);
                    let mut c = lo;
                    while c < hi {
                        let len = chunk.min(hi - c);
                        if !one_chunk {
                            scratch.new_chunk();
                        }
                        let pos = LanePos {
                            row: row_at(c),
                            stage_vals: &stage_vals,
                        };
                        eval_chunk(&r.expr, &stage_live[s], len, &pos, &[], None, scratch);
                        acc.fold(&scratch.bufs[stage.value]);
                        c += len;
                    }
                    acc
                };
                // Segments of whole lane rows, a few per thread.
                let acc = fold_row(
                    span,
                    chunk,
                    split,
                    &mut scratch,
                    || Scratch::<T>::with_stages(&r.expr, false),
                    fold_range,
                    LaneAcc::merge,
                )
                .unwrap_or_else(|| LaneAcc::new(stage.op, lanes));
                stage_vals.push(acc.values());
            }
            if r.out_full {
                let mut c = 0;
                while c < span {
                    let len = chunk.min(span - c);
                    if !one_chunk {
                        scratch.new_chunk();
                    }
                    let pos = LanePos {
                        row: row_at(c),
                        stage_vals: &stage_vals,
                    };
                    eval_chunk(&r.expr, &out_live, len, &pos, &[], None, &mut scratch);
                    // SAFETY: this group's positions are its own (see
                    // `SyncPtr`) and lie inside the output.
                    unsafe { store_full(&ptr, lin_walk, c, &scratch.bufs[r.out]) };
                    c += len;
                }
            } else {
                // One value per lane: the loads of a per-row output do not
                // vary along the reduced axes, so walk them with those at 1.
                rw.move_single(&load_kept, &outer);
                let pos = LanePos {
                    row: RowPos {
                        body: r,
                        axes: &axes,
                        args,
                        walks: &rw.single,
                        lin_walk: &rw.lin,
                        outer_coords: &outer,
                        row_shape: &row_shape,
                        start: 0,
                    },
                    stage_vals: &stage_vals,
                };
                scratch.new_chunk();
                eval_chunk(&r.expr, &out_live, lanes, &pos, &[], None, &mut scratch);
                let at = g * lanes;
                debug_assert!(at + lanes <= out_len);
                // SAFETY: outputs g*lanes..(g+1)*lanes belong to this group
                // only and lie inside the output (it has groups*lanes values).
                let dst = unsafe { std::slice::from_raw_parts_mut(ptr.at(at), lanes) };
                store_typed(dst, &scratch.bufs[r.out][..lanes]);
            }
        }
    });
}
