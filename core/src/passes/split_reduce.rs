//! Splitting long reductions for GPUs. A reduction kernel gives each output
//! row one workgroup, so a full reduction (`x.sum()`) or one over a few
//! long rows keeps one or a few of the GPU's multiprocessors busy while the
//! rest idle: on an H200 a sum of 1M f32 took 10x torch's time that way.
//! This pass rewrites such a reduction over trailing axes into two: the row
//! is viewed as `[chunks, len / chunks]`, each chunk is reduced by its own
//! workgroup, and a second, short reduction combines the chunk results.
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

/// Splits one long reduction; returns true if it changed the graph (the
/// driver calls it until it returns false).
pub fn split_long_reductions(g: &mut Graph, limits: &Limits) -> bool {
    if !limits.split_long_reductions {
        return false;
    }
    for i in 0..g.nodes.len() {
        if let Some(plan) = plan_split(g, i) {
            apply(g, i, plan);
            return true;
        }
    }
    false
}

/// What a split inserts for node `i`.
struct Plan {
    op: ReduceOp,
    /// Axes the reduction keeps (the leading ones).
    kept: Vec<usize>,
    chunks: usize,
    chunk_len: usize,
    /// The reshaped view of the input: `kept ++ [chunks, chunk_len]`.
    view: Layout,
}

fn plan_split(g: &Graph, i: usize) -> Option<Plan> {
    let n = &g.nodes[i];
    let GOp::Op(Op::Reduce { op, axes }) = &n.op else {
        return None;
    };
    if !matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min) {
        return None;
    }
    let x = &g.nodes[*n.inputs.first()?];
    let shape = x.shape();
    let rank = shape.len();
    // Trailing axes only: then the reduced elements of a row are one
    // contiguous run of the row-major order and can be chunked by a reshape.
    let first = rank.checked_sub(axes.len())?;
    if axes.is_empty() || axes.iter().copied().ne(first..rank) {
        return None;
    }
    let rows: usize = shape[..first].iter().product();
    let row_len: usize = shape[first..].iter().product();
    if rows == 0 || rows >= MANY_ROWS || row_len < LONG_ROW {
        return None;
    }
    let most = (TARGET_GROUPS / rows).min(row_len / MIN_CHUNK);
    let chunks = (MIN_CHUNKS..=most).rev().find(|c| row_len % c == 0)?;
    let chunk_len = row_len / chunks;
    let kept = shape[..first].to_vec();
    let mut view_shape = kept.clone();
    view_shape.extend([chunks, chunk_len]);
    // A lazy op's result is contiguous; a view or input may not reshape
    // without a copy, and then the reduction stays as it is.
    let view = match &x.op {
        GOp::Op(Op::View(_)) | GOp::Input(_) => x.layout.reshape_view(&view_shape)?,
        _ => Layout::contiguous(&view_shape),
    };
    Some(Plan {
        op: *op,
        kept,
        chunks,
        chunk_len,
        view,
    })
}

/// Inserts `view -> partial -> combined` before node `i` and turns node `i`
/// into a reshape of `combined` to its own shape, so its users are unchanged.
fn apply(g: &mut Graph, i: usize, p: Plan) {
    let x = g.nodes[i].inputs[0];
    let dtype = g.nodes[i].dtype;
    let out_shape = g.nodes[i].shape().to_vec();
    let k = p.kept.len();
    let with = |tail: &[usize]| -> Vec<usize> { p.kept.iter().chain(tail).copied().collect() };
    let partial_shape = with(&[p.chunks, 1]);
    let combined_shape = with(&[1, 1]);
    let rows: usize = p.kept.iter().product();
    // Indices after the insertion: the three new nodes take i, i+1, i+2.
    let view = GNode {
        op: GOp::Op(Op::View(ViewOp::Reshape(with(&[p.chunks, p.chunk_len])))),
        inputs: vec![x],
        dtype: g.nodes[x].dtype,
        layout: p.view,
        storage_len: g.nodes[x].storage_len,
    };
    let partial = GNode {
        op: GOp::Op(Op::Reduce {
            op: p.op,
            axes: vec![k + 1],
        }),
        inputs: vec![i],
        dtype,
        layout: Layout::contiguous(&partial_shape),
        storage_len: rows * p.chunks,
    };
    let combined = GNode {
        op: GOp::Op(Op::Reduce {
            op: p.op,
            axes: vec![k, k + 1],
        }),
        inputs: vec![i + 1],
        dtype,
        layout: Layout::contiguous(&combined_shape),
        storage_len: rows,
    };
    let result = GNode {
        op: GOp::Op(Op::View(ViewOp::Reshape(out_shape.clone()))),
        inputs: vec![i + 2],
        dtype,
        layout: Layout::contiguous(&out_shape),
        storage_len: rows,
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
