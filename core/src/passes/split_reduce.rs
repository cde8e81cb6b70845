//! Splitting long reductions for GPUs. A reduction kernel gives each output
//! row one workgroup, so a full reduction (`x.sum()`) or one over a few
//! long rows keeps one or a few of the GPU's multiprocessors busy while the
//! rest idle: on an H200 a sum of 1M f32 took 10x torch's time that way.
//! This pass rewrites such a reduction over trailing axes into two: the row
//! is viewed as `[chunks, len / chunks]`, each chunk is reduced by its own
//! workgroup, and a second, short reduction combines the chunk results.
//!
//! Targets that set [`Limits::split_column_reductions`] also split
//! reductions over leading axes whose kept axes are contiguous, such as
//! batch norm's per-channel sums over N·H·W of an NHWC tensor. Unsplit,
//! that is one workgroup per channel reading a column with the channel
//! count as stride: few workgroups, and no two threads of a warp reading
//! neighbouring words. Split, the input is viewed as `[chunks, len /
//! chunks, channels...]`: the partial sums run one thread per (chunk,
//! channel), so a warp reads adjacent channels of one row, and a short
//! reduction over the chunks combines them.
//!
//! Only sum, max and min are split (they are associative; a split sum is a
//! two-level sum, no less accurate than one pass). The pass runs on the op
//! graph before lowering, so the fusion passes still see ordinary
//! reductions: a producer map fuses into the first, a mean's scale into the
//! second. Targets opt in through [`Limits::split_long_reductions`]; the
//! CPU runs long rows across its threads without it.

use crate::graph::dag::{GNode, GOp, Graph};
use crate::graph::op::{Op, ReduceOp, ViewOp};
use crate::layout::Layout;
use crate::passes::Limits;

/// Rows at or above this many already fill the GPU's workgroups.
const MANY_ROWS: usize = 256;
/// Shorter rows are one workgroup's work anyway.
const LONG_ROW: usize = 1 << 16;
/// Workgroups (rows × chunks) the first reduction aims for.
const TARGET_GROUPS: usize = 1024;
/// Elements each chunk keeps at least, so a workgroup has work to amortise.
const MIN_CHUNK: usize = 2048;
/// Fewer chunks than this is not worth a second kernel.
const MIN_CHUNKS: usize = 8;
/// Column splits: threads (chunks × kept positions) the partial sums aim
/// for, about half of what an H100's multiprocessors hold at once.
const COLUMN_THREADS: usize = 1 << 17;
/// Columns reduced over fewer rows are one kernel's work anyway.
const LONG_COLUMN: usize = 4096;
/// Rows each thread of the partial sums folds at least.
const MIN_COLUMN_CHUNK: usize = 16;
/// More chunks would make the combining reduction itself long (it must stay
/// below `LONG_COLUMN`, or it would be split again).
const MAX_COLUMN_CHUNKS: usize = 2048;
/// A warp's worth of adjacent columns, so that its reads coalesce.
const MIN_COLUMNS: usize = 32;

/// Splits every long reduction of the graph in one pass; returns true if it
/// changed the graph. (A training step has a hundred or more: one split
/// per pass, as this once did, ran into the driver's pass bound and left
/// the rest whole.)
pub fn split_long_reductions(g: &mut Graph, limits: &Limits) -> bool {
    if !limits.split_long_reductions {
        return false;
    }
    let mut changed = false;
    let mut i = 0;
    while i < g.nodes.len() {
        match plan_split(g, i, limits) {
            Some(plan) => {
                apply(g, i, plan);
                changed = true;
                // The view, partial and combined reductions now sit at
                // i..i+3 and the reshape that replaced node i at i+3; the
                // combined reduction is short by construction.
                i += 4;
            }
            None => i += 1,
        }
    }
    changed
}

/// What a split inserts for node `i`: `view` of the input, a `partial`
/// reduction over one axis of it, a `combined` reduction over two.
struct Plan {
    op: ReduceOp,
    /// Output rows (positions of the kept axes).
    rows: usize,
    chunks: usize,
    view: Layout,
    partial_axes: Vec<usize>,
    partial_shape: Vec<usize>,
    combined_axes: Vec<usize>,
    combined_shape: Vec<usize>,
}

fn plan_split(g: &Graph, i: usize, limits: &Limits) -> Option<Plan> {
    let n = &g.nodes[i];
    let GOp::Op(Op::Reduce { op, axes }) = &n.op else {
        return None;
    };
    if !matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min) || axes.is_empty() {
        return None;
    }
    let x = &g.nodes[*n.inputs.first()?];
    let shape = x.shape();
    let rank = shape.len();
    // A lazy op's result is contiguous; a view or input may not reshape
    // without a copy, and then the reduction stays as it is.
    let view_of = |view_shape: &[usize]| match &x.op {
        GOp::Op(Op::View(_)) | GOp::Input(_) => x.layout.reshape_view(view_shape),
        _ => Some(Layout::contiguous(view_shape)),
    };
    let first = rank.checked_sub(axes.len())?;
    // Trailing axes: the reduced elements of a row are one contiguous run of
    // the row-major order and can be chunked by a reshape.
    if axes.iter().copied().eq(first..rank) {
        let rows: usize = shape[..first].iter().product();
        let row_len: usize = shape[first..].iter().product();
        if rows == 0 || rows >= MANY_ROWS || row_len < LONG_ROW {
            return None;
        }
        let most = (TARGET_GROUPS / rows).min(row_len / MIN_CHUNK);
        let chunks = (MIN_CHUNKS..=most).rev().find(|c| row_len % c == 0)?;
        let kept = &shape[..first];
        let with = |tail: &[usize]| -> Vec<usize> { kept.iter().chain(tail).copied().collect() };
        let k = kept.len();
        return Some(Plan {
            op: *op,
            rows,
            chunks,
            view: view_of(&with(&[chunks, row_len / chunks]))?,
            partial_axes: vec![k + 1],
            partial_shape: with(&[chunks, 1]),
            combined_axes: vec![k, k + 1],
            combined_shape: with(&[1, 1]),
        });
    }
    // Leading axes with the kept ones contiguous (columns): chunks of the
    // reduced rows, each chunk's sum per column in one thread.
    let lead = axes.len();
    if !limits.split_column_reductions || lead >= rank || axes.iter().copied().ne(0..lead) {
        return None;
    }
    let rows: usize = shape[lead..].iter().product();
    let row_len: usize = shape[..lead].iter().product();
    if rows == 0
        || shape[rank - 1] < MIN_COLUMNS
        || rows >= COLUMN_THREADS / 4
        || row_len < LONG_COLUMN
    {
        return None;
    }
    let most = (COLUMN_THREADS / rows)
        .min(row_len / MIN_COLUMN_CHUNK)
        .min(MAX_COLUMN_CHUNKS);
    let chunks = (MIN_CHUNKS..=most).rev().find(|c| row_len % c == 0)?;
    let kept = &shape[lead..];
    let with = |head: &[usize]| -> Vec<usize> { head.iter().chain(kept).copied().collect() };
    let view = view_of(&with(&[chunks, row_len / chunks]))?;
    // Reading the columns in memory order is the point of the split.
    if view.strides.last() != Some(&1) {
        return None;
    }
    Some(Plan {
        op: *op,
        rows,
        chunks,
        view,
        partial_axes: vec![1],
        partial_shape: with(&[chunks, 1]),
        combined_axes: vec![0, 1],
        combined_shape: with(&[1, 1]),
    })
}

/// Inserts `view -> partial -> combined` before node `i` and turns node `i`
/// into a reshape of `combined` to its own shape, so its users are unchanged.
fn apply(g: &mut Graph, i: usize, p: Plan) {
    let x = g.nodes[i].inputs[0];
    let dtype = g.nodes[i].dtype;
    let out_shape = g.nodes[i].shape().to_vec();
    // Indices after the insertion: the three new nodes take i, i+1, i+2.
    let view = GNode {
        op: GOp::Op(Op::View(ViewOp::Reshape(p.view.shape.clone()))),
        inputs: vec![x],
        dtype: g.nodes[x].dtype,
        layout: p.view,
        storage_len: g.nodes[x].storage_len,
    };
    let partial = GNode {
        op: GOp::Op(Op::Reduce {
            op: p.op,
            axes: p.partial_axes,
        }),
        inputs: vec![i],
        dtype,
        layout: Layout::contiguous(&p.partial_shape),
        storage_len: p.rows * p.chunks,
    };
    let combined = GNode {
        op: GOp::Op(Op::Reduce {
            op: p.op,
            axes: p.combined_axes,
        }),
        inputs: vec![i + 1],
        dtype,
        layout: Layout::contiguous(&p.combined_shape),
        storage_len: p.rows,
    };
    let result = GNode {
        op: GOp::Op(Op::View(ViewOp::Reshape(out_shape.clone()))),
        inputs: vec![i + 2],
        dtype,
        layout: Layout::contiguous(&out_shape),
        storage_len: p.rows,
    };
    // Every index at or after `i` moves up by three.
    let shift = |j: usize| if j >= i { j + 3 } else { j };
    for n in &mut g.nodes[i + 1..] {
        n.inputs.iter_mut().for_each(|j| *j = shift(*j));
    }
    for o in &mut g.outputs {
        *o = shift(*o);
    }
    g.nodes[i] = result;
    g.nodes.splice(i..i, [view, partial, combined]);
}
