//! Graph passes. Each is a small function over the graph that returns true
//! when it changed something; the driver runs them to a fixed point.
//!
//! Order: fold, CSE and view elimination on the op graph; lowering of every
//! op to a one-op kernel; then elementwise, reduction and epilogue fusion.

pub mod builder;
pub mod compose;
pub mod cse;
pub mod epilogue;
pub mod fold;
pub mod fuse_elementwise;
pub mod fuse_reduce;
pub mod lower;
pub mod split_concat;
pub mod split_reduce;
pub mod view_elim;

use crate::graph::dag::Graph;

/// Target limits fusion respects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Input buffers one kernel may bind (the output takes one more).
    pub max_kernel_args: usize,
    /// `false` lowers every op to its own kernel (for benchmarks and tests).
    pub fuse: bool,
    /// Split reductions over a few long rows into chunks (GPUs, which give
    /// each output row one workgroup; see `split_reduce`).
    pub split_long_reductions: bool,
    /// Also split reductions over the leading axes of a tensor whose kept
    /// axes are the contiguous ones (batch norm's per-channel sums over
    /// N·H·W of NHWC): the partial sums then run one thread per (chunk,
    /// channel), reading rows in memory order. Only for targets whose
    /// reduce template has the one-thread-per-row form (CUDA).
    pub split_column_reductions: bool,
    /// The backend runs [`crate::graph::op::Op::Conv2d`] nodes itself
    /// (cuDNN), so `conv2d` builds one node per pass instead of
    /// im2col + matmul.
    pub native_conv2d: bool,
}

impl Limits {
    /// The CPU has no binding limit; 64 keeps kernels readable.
    pub fn cpu() -> Self {
        Limits {
            max_kernel_args: 64,
            fuse: true,
            split_long_reductions: false,
            split_column_reductions: false,
            native_conv2d: false,
        }
    }

    /// WebGPU's default of 8 storage buffers per shader stage, one being the output.
    pub fn webgpu() -> Self {
        Limits {
            max_kernel_args: 7,
            fuse: true,
            split_long_reductions: true,
            split_column_reductions: false,
            native_conv2d: false,
        }
    }

    pub fn unfused(self) -> Self {
        Limits {
            fuse: false,
            ..self
        }
    }
}

/// Runs every pass to a fixed point. Afterwards every computing node is a kernel.
pub fn optimize(g: &mut Graph, limits: &Limits) {
    g.eliminate_dead();
    // One pass splits them all; the reductions it adds are short.
    split_reduce::split_long_reductions(g, limits);
    split_concat::split_wide_concats(g, limits);
    // Each pass strictly shrinks the graph or rewrites a node into a final
    // form, so the loop ends; the bound guards against a pass bug.
    for _ in 0..64 {
        let mut changed = fold::fold_constants(g);
        changed |= cse::eliminate_common_subexpressions(g);
        changed |= view_elim::eliminate_views(g);
        if !changed {
            break;
        }
    }
    lower::lower(g);
    // Lowering folds views into the kernels' accesses; the view nodes left
    // behind must not count as readers when fusion asks who reads a kernel.
    g.eliminate_dead();
    if !limits.fuse {
        return;
    }
    for _ in 0..256 {
        let mut changed = fuse_elementwise::fuse_elementwise(g, limits);
        changed |= fuse_reduce::fuse_reduce(g, limits);
        changed |= epilogue::fuse_epilogue(g, limits);
        if !changed {
            break;
        }
        g.eliminate_dead();
    }
}
