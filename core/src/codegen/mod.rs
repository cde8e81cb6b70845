//! Kernel IR → source text. One C-like renderer ([`render`](self::render))
//! walks a [`Kernel`] and emits index math (strides baked in as constants)
//! and one declaration per expression node; the two dialects, WGSL and CUDA
//! C, only override types, builtins, barriers, f16/bf16 handling and the
//! entry-point/binding syntax. The tiled matmul and the row reduction are
//! hand-written templates under `shaders/` into which the renderer splices
//! its load, stage and epilogue functions.
//!
//! Dtype strategy:
//! - WGSL: f32/i32 native; f16 native with `enable f16;` (needs the
//!   adapter's `shader-f16`, otherwise an error); bf16 stored two per `u32`
//!   and computed in f32; u8 and bool stored four per `u32` (bool as 0/1
//!   bytes); f64 is refused. Map-like kernels with a packed output write
//!   whole words from one invocation; row reductions and matmuls with a
//!   packed output merge their elements into words with `atomicAnd`/`atomicOr`
//!   on disjoint bits, which is exact whatever the buffer held before.
//! - CUDA: `float`, `double`, `__half`, `__nv_bfloat16`, `int`, `unsigned
//!   char` (u8 and bool); headers only when used, so NVRTC needs no include
//!   path for f32 kernels.
//!
//! In both dialects f16/bf16 values compute in f32 and are rounded when cast
//! or stored; integer arithmetic wraps, integer division truncates and
//! division by zero gives 0; `maximum`/`minimum` propagate NaN; float→int
//! casts truncate and saturate with NaN→0, matching
//! [`BinaryOp::eval_int`](crate::graph::op::BinaryOp::eval_int) and
//! [`DType::round_f64`].
//!
//! ```
//! use fusegraph_core::codegen::{render, RenderOptions};
//! use fusegraph_core::graph::op::UnaryOp;
//! use fusegraph_core::schedule::{ArgInfo, Body, Expr, ExprNode, Kernel, MapBody};
//! use fusegraph_core::{DType, Layout};
//!
//! let mut expr = Expr::default();
//! let x = expr.push(ExprNode::Load { arg: 0, access: Layout::contiguous(&[4, 8]) }, DType::F32);
//! let y = expr.push(ExprNode::Unary(UnaryOp::Relu, x), DType::F32);
//! let kernel = Kernel {
//!     body: Body::Map(MapBody { shape: vec![4, 8], expr, out: y }),
//!     args: vec![ArgInfo { dtype: DType::F32, len: 32 }],
//!     out_dtype: DType::F32,
//!     out_shape: vec![4, 8],
//! };
//! let k = render(&kernel, &RenderOptions::wgsl()).unwrap();
//! assert!(k.source.contains(&k.entry));
//! assert_eq!(k.bindings.len(), 2);
//! ```

mod cuda;
mod render;
mod row_cache;
#[cfg(test)]
mod tests;
mod wgsl;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::schedule::{Body, Kernel};

/// The target language of a rendered kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// WebGPU Shading Language (wgpu, browsers).
    Wgsl,
    /// CUDA C++ for NVRTC.
    Cuda,
}

/// What the target can do; the renderer refuses what it cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RenderOptions {
    pub dialect: Dialect,
    /// The WGSL adapter has the `shader-f16` feature (ignored for CUDA).
    pub shader_f16: bool,
    /// Storage buffers one WGSL stage may bind (WebGPU's default is 8); the
    /// fuser keeps kernels under it, the renderer only checks.
    pub max_storage_buffers: u32,
    /// The WGSL adapter has subgroup operations (wgpu's `SUBGROUP`
    /// feature): row reductions fold across subgroups. Ignored for CUDA,
    /// whose reductions keep the shared-memory tree (warp shuffles measured
    /// no faster there).
    pub subgroups: bool,
}

impl RenderOptions {
    /// WebGPU defaults: no `shader-f16`, 8 storage buffers per stage.
    pub fn wgsl() -> Self {
        RenderOptions {
            dialect: Dialect::Wgsl,
            shader_f16: false,
            max_storage_buffers: 8,
            subgroups: false,
        }
    }

    /// CUDA (NVRTC): every dtype, no practical buffer limit.
    pub fn cuda() -> Self {
        RenderOptions {
            dialect: Dialect::Cuda,
            shader_f16: true,
            max_storage_buffers: u32::MAX,
            subgroups: false,
        }
    }
}

/// `FUSEGRAPH_TREE_REDUCE=1`: row reductions use the workgroup-memory tree
/// even where subgroups exist (to compare the two). Read once, when a
/// backend fixes its [`RenderOptions`] (only the wgpu backend has subgroups).
#[cfg(feature = "wgpu")]
pub(crate) fn tree_reduce_forced() -> bool {
    std::env::var("FUSEGRAPH_TREE_REDUCE").is_ok_and(|v| v == "1")
}

/// A kernel ready for a backend to compile and launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedKernel {
    /// `fg_<kind>_<hash>`, also the entry point's name.
    pub name: String,
    pub source: String,
    pub entry: String,
    /// WGSL `@workgroup_size` or the CUDA block shape.
    pub workgroup_size: [u32; 3],
    /// Workgroups to dispatch (WGSL) or the CUDA grid.
    pub dispatch: [u32; 3],
    /// Arguments in order, then the output (binding index = position).
    pub bindings: Vec<BindingInfo>,
}

/// One buffer the kernel binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingInfo {
    /// WGSL `@binding(n)` in group 0, or the CUDA parameter position.
    pub binding: u32,
    pub dtype: DType,
    /// Buffer size: `u32` words for WGSL (rounded up), elements for CUDA.
    pub words: usize,
    pub read_only: bool,
    /// WGSL only: elements are packed into `u32` words (bf16: 2, u8/bool: 4).
    pub packed: bool,
}

/// Renders `kernel` for `opts.dialect`.
///
/// Errors: [`Error::UnsupportedDType`] for f64 on WGSL or f16 without
/// `shader-f16`; [`Error::InvalidArgument`] when the kernel needs more
/// storage buffers than `opts` allows, indexes past what 32-bit WGSL indices
/// reach, or is malformed (operand ids out of order, rank mismatches).
pub fn render(kernel: &Kernel, opts: &RenderOptions) -> Result<RenderedKernel> {
    check_kernel(kernel)?;
    let name = format!("fg_{}_{:016x}", kernel.kind(), kernel_hash(kernel));
    match opts.dialect {
        Dialect::Wgsl => {
            wgsl::check(kernel, opts)?;
            render::render_with(&wgsl::Wgsl::new(kernel, opts), kernel, name)
        }
        Dialect::Cuda => render::render_with(&cuda::Cuda::new(kernel), kernel, name),
    }
}

/// A stable structural hash of the kernel IR (FNV-1a over its canonical
/// `Debug` text), used as the cache key and in generated names. FNV rather
/// than `DefaultHasher` so the value survives Rust upgrades and can key an
/// on-disk cache.
pub fn kernel_hash(kernel: &Kernel) -> u64 {
    let text = format!("{kernel:?}");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn invalid(what: &'static str, expected: &'static str, got: String) -> Error {
    Error::InvalidArgument {
        op: "render",
        what,
        expected,
        got,
    }
}

/// Structural checks the renderer relies on, so malformed IR becomes an
/// error instead of an out-of-bounds index while rendering.
fn check_kernel(k: &Kernel) -> Result<()> {
    use crate::schedule::{Expr, ExprNode};
    let check_expr = |e: &Expr, domain_rank: usize| -> Result<()> {
        if e.nodes.len() != e.dtypes.len() {
            return Err(invalid(
                "expression",
                "one dtype per node",
                format!("{} nodes, {} dtypes", e.nodes.len(), e.dtypes.len()),
            ));
        }
        for i in 0..e.nodes.len() {
            if let Some(&c) = e.children(i).iter().find(|&&c| c >= i) {
                return Err(invalid(
                    "expression operand",
                    "an earlier node",
                    format!("node {i} uses node {c}"),
                ));
            }
            match &e.nodes[i] {
                ExprNode::Load { arg, access } => {
                    if *arg >= k.args.len() {
                        return Err(invalid(
                            "load argument",
                            "an index into the kernel's args",
                            format!("{arg} of {}", k.args.len()),
                        ));
                    }
                    if access.shape.len() != domain_rank || access.strides.len() != domain_rank {
                        return Err(invalid(
                            "load access rank",
                            "the rank of the kernel domain",
                            format!("{:?} over a rank-{domain_rank} domain", access.shape),
                        ));
                    }
                }
                ExprNode::Coord(a) if *a >= domain_rank => {
                    return Err(invalid(
                        "coordinate axis",
                        "an axis of the kernel domain",
                        format!("{a} of rank {domain_rank}"),
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    };
    let root = |e: &Expr, r: usize| -> Result<()> {
        if r >= e.nodes.len() {
            return Err(invalid(
                "expression root",
                "a node of the expression",
                format!("{r} of {}", e.nodes.len()),
            ));
        }
        Ok(())
    };
    let rank_ok = |l: &crate::layout::Layout, rank: usize, what: &'static str| -> Result<()> {
        if l.shape.len() != rank || l.strides.len() != rank {
            return Err(invalid(
                what,
                "the rank of the kernel domain",
                format!(
                    "shape {:?} strides {:?} for rank {rank}",
                    l.shape, l.strides
                ),
            ));
        }
        Ok(())
    };
    let need_args = |n: usize| -> Result<()> {
        if k.args.len() < n {
            return Err(invalid(
                "kernel args",
                "one per input of the body",
                format!("{}", k.args.len()),
            ));
        }
        Ok(())
    };
    match &k.body {
        Body::Map(m) => {
            check_expr(&m.expr, m.shape.len())?;
            root(&m.expr, m.out)?;
        }
        Body::Reduce(r) => {
            check_expr(&r.expr, r.shape.len())?;
            root(&r.expr, r.out)?;
            for s in &r.stages {
                root(&r.expr, s.value)?;
            }
            if r.axes.iter().any(|&a| a >= r.shape.len()) || r.axes.windows(2).any(|w| w[0] >= w[1])
            {
                return Err(invalid(
                    "reduce axes",
                    "sorted distinct axes of the domain",
                    format!("{:?} of {:?}", r.axes, r.shape),
                ));
            }
        }
        Body::Conv(c) => {
            need_args(2)?;
            rank_ok(&c.a, 4, "conv operand layout")?;
            rank_ok(&c.b, 4, "conv operand layout")?;
        }
        Body::Matmul(mm) => {
            need_args(2)?;
            check_expr(&mm.epilogue, mm.batch.len() + 2)?;
            root(&mm.epilogue, mm.out)?;
            rank_ok(&mm.a, mm.batch.len() + 2, "matmul lhs layout")?;
            rank_ok(&mm.b, mm.batch.len() + 2, "matmul rhs layout")?;
        }
        Body::Concat(c) => {
            need_args(c.parts.len())?;
            if c.axis >= c.shape.len() {
                return Err(invalid(
                    "concat axis",
                    "an axis of the output",
                    format!("{} of {:?}", c.axis, c.shape),
                ));
            }
            for p in &c.parts {
                rank_ok(p, c.shape.len(), "concat part layout")?;
            }
        }
        Body::Index(ix) => {
            need_args(2)?;
            if ix.axis >= ix.shape.len() {
                return Err(invalid(
                    "index axis",
                    "an axis of the output",
                    format!("{} of {:?}", ix.axis, ix.shape),
                ));
            }
            rank_ok(&ix.src, ix.shape.len(), "index source layout")?;
            rank_ok(
                &ix.idx,
                if ix.gather { ix.shape.len() } else { 1 },
                "index layout",
            )?;
        }
    }
    Ok(())
}
