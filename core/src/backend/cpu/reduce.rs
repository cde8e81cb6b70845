//! Row kernels (reductions, softmax, layer norm): for every position of the
//! kept axes, each stage folds its value over the row in chunks, then the
//! output is written per row (one value) or per element (full rows).

use crate::backend::cpu::access::{gather, store_typed, Walk};
use crate::backend::cpu::compute::Compute;
use crate::backend::cpu::eval::{eval_chunk, needs_f64, Positions, Scratch};
use crate::backend::cpu::map::CHUNK;
use crate::backend::cpu::par::{map_range, threads};
use crate::backend::cpu::CpuStorage;
use crate::backend::cpu::{reduce_columns, softmax_rows};
use crate::dtype::Element;
use crate::graph::op::ReduceOp;
use crate::layout::Layout;
use crate::schedule::kernel::{ExprId, ExprNode, ReduceBody};

/// A raw output pointer shared by threads that write disjoint elements.
pub(super) struct SyncPtr<E>(pub(super) *mut E);
// SAFETY: every row kernel task writes only the output positions of its own
// rows, and the domain maps rows to disjoint positions, so no element is
// written by two threads and none is read while written.
unsafe impl<E> Sync for SyncPtr<E> {}
unsafe impl<E> Send for SyncPtr<E> {}

impl<E> SyncPtr<E> {
    pub(super) fn at(&self, i: usize) -> *mut E {
        // SAFETY: callers pass indices inside the output slice.
        unsafe { self.0.add(i) }
    }
}

/// The positions of one row, from `start` for a chunk.
pub(super) struct RowPos<'a> {
    pub(super) body: &'a ReduceBody,
    /// The domain axes a row runs along (the reduced ones, here; the column
    /// kernel adds the last axis).
    pub(super) axes: &'a [usize],
    pub(super) args: &'a [&'a CpuStorage],
    pub(super) walks: &'a [Option<Walk>],
    /// Domain-linear indices of the row (contiguous strides of the domain).
    pub(super) lin_walk: &'a Walk,
    pub(super) outer_coords: &'a [usize],
    pub(super) row_shape: &'a [usize],
    pub(super) start: usize,
}

impl<T: Compute> Positions<T> for RowPos<'_> {
    fn load(&self, node: ExprId, out: &mut [T]) {
        if let (ExprNode::Load { arg, .. }, Some(w)) =
            (&self.body.expr.nodes[node], &self.walks[node])
        {
            gather(self.args[*arg], w, self.start, out);
        }
    }
    fn coord(&self, axis: usize, out: &mut [T]) {
        match self.axes.iter().position(|&a| a == axis) {
            None => {
                let kept = (0..axis).filter(|a| !self.axes.contains(a)).count();
                out.fill(T::from_f64(self.outer_coords[kept] as f64));
            }
            Some(r) => {
                let inner: usize = self.row_shape[r + 1..].iter().product();
                for (j, o) in out.iter_mut().enumerate() {
                    *o = T::from_f64((((self.start + j) / inner) % self.row_shape[r]) as f64);
                }
            }
        }
    }
    fn direct(&self, node: ExprId, len: usize) -> Option<&[T]> {
        match (&self.body.expr.nodes[node], &self.walks[node]) {
            (ExprNode::Load { arg, .. }, Some(w)) if w.dense() => {
                let o = w.offset as usize + self.start;
                T::native(self.args[*arg]).and_then(|v| v.get(o..o + len))
            }
            _ => None,
        }
    }
    fn linear(&self, out: &mut [u32]) {
        self.lin_walk.runs(self.start, out.len(), |p, idx, n, s| {
            for j in 0..n {
                out[p + j] = (idx + j as isize * s) as u32;
            }
        });
    }
}

/// Running value of one stage (also the softmax row kernel's max and sum).
#[derive(Clone, Copy)]
pub(super) enum Acc<T> {
    Sum(f64),
    Max(T, bool),
    Min(T, bool),
    ArgMax(T, usize, bool),
}

impl<T: Compute> Acc<T> {
    pub(super) fn new(op: ReduceOp) -> Self {
        match op {
            ReduceOp::Sum => Acc::Sum(0.0),
            ReduceOp::Max => Acc::Max(T::NEG_INF, false),
            ReduceOp::Min => Acc::Min(T::INF, false),
            ReduceOp::ArgMax => Acc::ArgMax(T::NEG_INF, 0, false),
        }
    }

    /// Folds a chunk that starts at row position `at`.
    pub(super) fn fold(&mut self, vals: &[T], at: usize) {
        match self {
            Acc::Sum(total) => {
                let mut lanes = [T::ZERO; 8];
                let mut it = vals.chunks_exact(8);
                for c in &mut it {
                    for l in 0..8 {
                        lanes[l] = lanes[l] + c[l];
                    }
                }
                let mut part = T::ZERO;
                for &x in it.remainder() {
                    part = part + x;
                }
                *total += lanes.iter().map(|x| x.to_f64()).sum::<f64>() + part.to_f64();
            }
            Acc::Max(m, nan) => {
                let (v, n) = fold_lanes(vals, *m, |a, b| if b > a { b } else { a });
                *m = if v > *m { v } else { *m };
                *nan |= n;
            }
            Acc::Min(m, nan) => {
                let (v, n) = fold_lanes(vals, *m, |a, b| if b < a { b } else { a });
                *m = if v < *m { v } else { *m };
                *nan |= n;
            }
            Acc::ArgMax(m, idx, nan) => {
                // NaN counts as the maximum (the first NaN wins), as in PyTorch.
                for (j, &x) in vals.iter().enumerate() {
                    if *nan {
                        break;
                    }
                    if x.is_nan() {
                        *nan = true;
                        *idx = at + j;
                    } else if x > *m || (at + j == 0 && x == *m) {
                        *m = x;
                        *idx = at + j;
                    }
                }
            }
        }
    }

    /// Combines with the accumulator of a later segment of the row.
    fn merge(self, later: Acc<T>) -> Acc<T> {
        match (self, later) {
            (Acc::Sum(a), Acc::Sum(b)) => Acc::Sum(a + b),
            (Acc::Max(a, na), Acc::Max(b, nb)) => Acc::Max(if b > a { b } else { a }, na | nb),
            (Acc::Min(a, na), Acc::Min(b, nb)) => Acc::Min(if b < a { b } else { a }, na | nb),
            (Acc::ArgMax(a, ia, na), Acc::ArgMax(b, ib, nb)) => {
                if na || (!nb && a >= b) {
                    Acc::ArgMax(a, ia, na)
                } else {
                    Acc::ArgMax(b, ib, nb)
                }
            }
            (a, _) => a,
        }
    }

    pub(super) fn value(self) -> T {
        match self {
            Acc::Sum(t) => T::from_f64(t),
            Acc::Max(m, nan) | Acc::Min(m, nan) => {
                if nan {
                    T::from_f64(f64::NAN)
                } else {
                    m
                }
            }
            Acc::ArgMax(_, i, _) => T::from_f64(i as f64),
        }
    }
}

/// Folds with 8 independent lanes (so LLVM emits vector max/min) and
/// reports whether any NaN was seen.
#[inline]
fn fold_lanes<T: Compute>(vals: &[T], init: T, f: impl Fn(T, T) -> T) -> (T, bool) {
    let mut lanes = [init; 8];
    // `x * 0` is 0 for finite x and NaN for NaN and ±inf, so one multiply-add
    // per element flags a slice to rescan for NaN. A per-lane `is_nan` flag
    // instead kept the loop scalar on wasm's SIMD128.
    let mut probe = [T::ZERO; 8];
    let mut it = vals.chunks_exact(8);
    for c in &mut it {
        for l in 0..8 {
            probe[l] = probe[l] + c[l] * T::ZERO;
            lanes[l] = f(lanes[l], c[l]);
        }
    }
    let mut acc = init;
    let mut any = false;
    for &x in it.remainder() {
        any |= x.is_nan();
        acc = f(acc, x);
    }
    if probe.iter().any(|p| p.is_nan()) {
        any |= vals.iter().any(|x| x.is_nan());
    }
    (lanes.into_iter().fold(acc, &f), any)
}

pub fn run_reduce(r: &ReduceBody, args: &[&CpuStorage], out: &mut CpuStorage) {
    if let Some(softmax) = softmax_rows::recognise(r) {
        if softmax.run(r, args, out) {
            return;
        }
    }
    let f64_compute = needs_f64(&r.expr, out.dtype());
    if reduce_columns::applies(r) {
        if f64_compute {
            crate::with_storage!(out, |o| reduce_columns::run_columns::<f64, _>(r, args, o))
        } else {
            crate::with_storage!(out, |o| reduce_columns::run_columns::<f32, _>(r, args, o))
        }
    } else if f64_compute {
        crate::with_storage!(out, |o| reduce_typed::<f64, _>(r, args, o))
    } else {
        crate::with_storage!(out, |o| reduce_typed::<f32, _>(r, args, o))
    }
}

/// A row of the domain as a layout: `l` restricted to the reduced axes,
/// starting at the given outer coordinates.
fn row_layout(l: &Layout, axes: &[usize], outer: &[usize]) -> Layout {
    let mut offset = l.offset as isize;
    let mut k = 0;
    let (mut shape, mut strides) = (Vec::new(), Vec::new());
    for a in 0..l.shape.len() {
        if axes.contains(&a) {
            shape.push(l.shape[a]);
            strides.push(l.strides[a]);
        } else {
            offset += outer[k] as isize * l.strides[a];
            k += 1;
        }
    }
    Layout {
        shape,
        strides,
        offset: offset as usize,
    }
}

/// The strides of `l` along the kept (non-reduced) axes: the row at outer
/// coordinates `c` starts `Σ c_k · stride_k` after the first row.
pub(super) fn kept_strides(l: &Layout, axes: &[usize]) -> Vec<isize> {
    (0..l.shape.len())
        .filter(|a| !axes.contains(a))
        .map(|a| l.strides[a])
        .collect()
}

/// Moves a walk built for the first row (offset `base`) to the row at
/// `outer`: only the offset differs from row to row, so nothing is rebuilt
/// (short rows are otherwise dominated by that per-row set-up).
fn move_walk(w: &mut Walk, base: isize, kept: &[isize], outer: &[usize]) {
    w.offset = base
        + kept
            .iter()
            .zip(outer)
            .map(|(&s, &c)| s * c as isize)
            .sum::<isize>();
}

/// [`move_walk`] for every load's walk.
fn move_walks(walks: &mut [Option<Walk>], base: &[isize], kept: &[Vec<isize>], outer: &[usize]) {
    for ((w, &b), st) in walks.iter_mut().zip(base).zip(kept) {
        if let Some(w) = w {
            move_walk(w, b, st, outer);
        }
    }
}

/// The walk of every load over the row (along `axes`) at `outer`; with
/// `unit`, the row's first `unit_axes` axes have size 1 (for per-row
/// outputs, whose loads do not vary along the reduced axes).
fn row_walks(
    r: &ReduceBody,
    axes: &[usize],
    outer: &[usize],
    unit_axes: usize,
) -> Vec<Option<Walk>> {
    r.expr
        .nodes
        .iter()
        .map(|n| match n {
            ExprNode::Load { access, .. } => {
                let mut l = row_layout(access, axes, outer);
                l.shape[..unit_axes].iter_mut().for_each(|d| *d = 1);
                Some(Walk::new(&l))
            }
            _ => None,
        })
        .collect()
}

/// Folds positions `0..len` of a row with `fold(lo, hi, scratch)`: in one
/// call, or (`split`) in segments of whole `unit`s spread over the
/// threads, each with a scratch of its own, merged in row order.
pub(super) fn fold_row<A: Send, S>(
    len: usize,
    unit: usize,
    split: bool,
    scratch: &mut S,
    new_scratch: impl Fn() -> S + Sync,
    fold: impl Fn(usize, usize, &mut S) -> A + Sync,
    merge: impl Fn(A, A) -> A,
) -> Option<A> {
    if !split {
        return Some(fold(0, len, scratch));
    }
    let seg = len.div_ceil(threads() * 4).div_ceil(unit).max(1) * unit;
    map_range(len.div_ceil(seg), |p| {
        fold(p * seg, ((p + 1) * seg).min(len), &mut new_scratch())
    })
    .into_iter()
    .reduce(merge)
}

/// Per load: the strides that move its walk from row to row.
pub(super) fn load_kept_strides(r: &ReduceBody, axes: &[usize]) -> Vec<Vec<isize>> {
    r.expr
        .nodes
        .iter()
        .map(|n| match n {
            ExprNode::Load { access, .. } => kept_strides(access, axes),
            _ => Vec::new(),
        })
        .collect()
}

/// The walks one task of a row kernel moves from row to row: every load's
/// walk over a row (`walks`), over a row whose reduced axes have size 1
/// (`single`, for per-row outputs) and the domain's (`lin`), built once
/// for the first row; each row only moves their offsets.
pub(super) struct RowWalks {
    pub(super) walks: Vec<Option<Walk>>,
    walk_base: Vec<isize>,
    pub(super) single: Vec<Option<Walk>>,
    single_base: Vec<isize>,
    pub(super) lin: Walk,
    lin_base: isize,
}

impl RowWalks {
    /// `axes`: the domain axes a row runs along, the reduced ones first.
    pub(super) fn new(r: &ReduceBody, axes: &[usize], domain: &Layout, outer_rank: usize) -> Self {
        let outer = vec![0usize; outer_rank];
        let offsets = |w: &[Option<Walk>]| -> Vec<isize> {
            w.iter()
                .map(|w| w.as_ref().map_or(0, |w| w.offset))
                .collect()
        };
        let walks = row_walks(r, axes, &outer, 0);
        let single = row_walks(r, axes, &outer, r.axes.len());
        let lin = Walk::new(&row_layout(domain, axes, &outer));
        RowWalks {
            walk_base: offsets(&walks),
            single_base: offsets(&single),
            lin_base: lin.offset,
            walks,
            single,
            lin,
        }
    }

    /// Moves the row walks and the domain's to row `row` of the rows of
    /// `shape` (row-major), whose coordinates it leaves in `outer`.
    pub(super) fn move_to(
        &mut self,
        load_kept: &[Vec<isize>],
        lin_kept: &[isize],
        row: usize,
        shape: &[usize],
        outer: &mut [usize],
    ) {
        let mut rem = row;
        for k in (0..shape.len()).rev() {
            outer[k] = rem % shape[k];
            rem /= shape[k];
        }
        move_walks(&mut self.walks, &self.walk_base, load_kept, outer);
        move_walk(&mut self.lin, self.lin_base, lin_kept, outer);
    }

    /// Moves the unit-row walks to the row at `outer`.
    pub(super) fn move_single(&mut self, load_kept: &[Vec<isize>], outer: &[usize]) {
        move_walks(&mut self.single, &self.single_base, load_kept, outer);
    }
}

/// Stores a chunk of a full output, `vals`, at the domain positions that
/// `lin` gives for linear positions `start..start + vals.len()`.
///
/// # Safety
/// Those positions lie inside the output `out` points into, and no other
/// thread writes or reads them meanwhile (see [`SyncPtr`]).
pub(super) unsafe fn store_full<T: Compute, E: Element>(
    out: &SyncPtr<E>,
    lin: &Walk,
    start: usize,
    vals: &[T],
) {
    lin.runs(start, vals.len(), |p, idx, n, st| {
        if st == 1 {
            // SAFETY: the caller's positions (see above).
            let dst = unsafe { std::slice::from_raw_parts_mut(out.at(idx as usize), n) };
            store_typed(dst, &vals[p..p + n]);
        } else {
            for j in 0..n {
                // SAFETY: as above.
                unsafe {
                    *out.at((idx + j as isize * st) as usize) = E::from_f64(vals[p + j].to_f64())
                };
            }
        }
    });
}

fn reduce_typed<T: Compute, E: Element>(r: &ReduceBody, args: &[&CpuStorage], out: &mut [E]) {
    let kept_shape: Vec<usize> = (0..r.shape.len())
        .filter(|a| !r.axes.contains(a))
        .map(|a| r.shape[a])
        .collect();
    let row_shape: Vec<usize> = r.axes.iter().map(|&a| r.shape[a]).collect();
    let n_outer: usize = kept_shape.iter().product();
    let row_len: usize = row_shape.iter().product();
    let stage_live: Vec<Vec<ExprId>> = r
        .stages
        .iter()
        .map(|s| r.expr.reachable(&[s.value]))
        .collect();
    let out_live = r.expr.reachable(&[r.out]);
    let domain = Layout::contiguous(&r.shape);
    let ptr = SyncPtr(out.as_mut_ptr());
    let out_len = out.len();
    // Few long rows: split each row across threads instead.
    // Splitting one row across threads pays off only past a few MiB: below
    // that one core already reads at the memory bandwidth and the split
    // mostly adds wake-up jitter (measured on sum/max of 1024x1024).
    let split_rows = n_outer < threads() && row_len >= 1 << 22;
    // Rows that fit in one chunk keep every computed node for the whole row.
    let one_chunk = row_len <= CHUNK && !split_rows;
    let rows_per_task = if split_rows {
        1
    } else {
        (16 * 1024 / row_len.max(1)).clamp(1, 1024)
    };
    let tasks = n_outer.div_ceil(rows_per_task);
    let write = |i: usize, v: T| {
        debug_assert!(i < out_len);
        // SAFETY: see `SyncPtr`; `i` is inside the output (checked by the
        // domain: full outputs have numel(domain) elements, others n_outer).
        unsafe { *ptr.at(i) = E::from_f64(v.to_f64()) };
    };
    // Per load (and for the domain): the strides that move a walk from row to row.
    let load_kept = load_kept_strides(r, &r.axes);
    let lin_kept = kept_strides(&domain, &r.axes);
    map_range(tasks, |t| {
        let mut scratch = Scratch::<T>::new(&r.expr);
        let mut outer_coords = vec![0usize; kept_shape.len()];
        let mut rw = RowWalks::new(r, &r.axes, &domain, kept_shape.len());
        let mut stage_vals: Vec<T> = Vec::with_capacity(r.stages.len());
        for o in t * rows_per_task..((t + 1) * rows_per_task).min(n_outer) {
            rw.move_to(&load_kept, &lin_kept, o, &kept_shape, &mut outer_coords);
            let (walks, lin_walk) = (&rw.walks, &rw.lin);
            let pos_at = |start: usize| RowPos {
                body: r,
                axes: &r.axes,
                args,
                walks,
                lin_walk,
                outer_coords: &outer_coords,
                row_shape: &row_shape,
                start,
            };
            stage_vals.clear();
            scratch.new_chunk();
            for (s, stage) in r.stages.iter().enumerate() {
                // A stage that folds a dense input as it is stored skips the
                // copy into a chunk buffer (plain sum/max/min of a tensor).
                let direct: Option<&[T]> = match (&r.expr.nodes[stage.value], &walks[stage.value]) {
                    // An empty row reads nothing: its walk's offset may lie
                    // past the end of an empty storage.
                    (ExprNode::Load { arg, .. }, Some(w)) if w.dense() && row_len > 0 => {
                        T::native(args[*arg]).map(|v| {
                            let o = w.offset as usize;
                            &v[o..o + row_len]
                        })
                    }
                    _ => None,
                };
                let fold_range = |lo: usize, hi: usize, scratch: &mut Scratch<T>| {
                    let mut acc = Acc::<T>::new(stage.op);
                    if let Some(v) = direct {
                        let mut c = lo;
                        while c < hi {
                            let len = (4 * CHUNK).min(hi - c);
                            acc.fold(&v[c..c + len], c);
                            c += len;
                        }
                        return acc;
                    }
                    let mut c = lo;
                    while c < hi {
                        let len = CHUNK.min(hi - c);
                        if !one_chunk {
                            scratch.new_chunk();
                        }
                        eval_chunk(
                            &r.expr,
                            &stage_live[s],
                            len,
                            &pos_at(c),
                            &stage_vals,
                            None,
                            scratch,
                        );
                        acc.fold(&scratch.bufs[stage.value], c);
                        c += len;
                    }
                    acc
                };
                let acc = fold_row(
                    row_len,
                    CHUNK,
                    split_rows,
                    &mut scratch,
                    || {
                        let mut sc = Scratch::<T>::new(&r.expr);
                        sc.new_chunk();
                        sc
                    },
                    fold_range,
                    Acc::merge,
                )
                .unwrap_or(Acc::new(stage.op));
                stage_vals.push(acc.value());
            }
            if r.out_full {
                let mut c = 0;
                while c < row_len {
                    let len = CHUNK.min(row_len - c);
                    if !one_chunk {
                        scratch.new_chunk();
                    }
                    eval_chunk(
                        &r.expr,
                        &out_live,
                        len,
                        &pos_at(c),
                        &stage_vals,
                        None,
                        &mut scratch,
                    );
                    // SAFETY: positions of this row only (see `SyncPtr`),
                    // inside the output (it has numel(domain) elements).
                    unsafe { store_full(&ptr, lin_walk, c, &scratch.bufs[r.out]) };
                    c += len;
                }
            } else {
                // The per-row output reads its inputs once per row (stride 0
                // along the reduced axes): walk them over a row of size 1,
                // which also covers empty rows.
                rw.move_single(&load_kept, &outer_coords);
                let pos = RowPos {
                    body: r,
                    axes: &r.axes,
                    args,
                    walks: &rw.single,
                    lin_walk: &rw.lin,
                    outer_coords: &outer_coords,
                    row_shape: &row_shape,
                    start: 0,
                };
                scratch.new_chunk();
                eval_chunk(&r.expr, &out_live, 1, &pos, &stage_vals, None, &mut scratch);
                write(o, scratch.bufs[r.out][0]);
            }
        }
    });
}
