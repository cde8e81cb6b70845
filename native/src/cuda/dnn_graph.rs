//! One convolution pass as a cuDNN operation graph (the backend API).
//!
//! The backend API is cuDNN's current interface (the one PyTorch uses):
//! describe the tensors and the operation, ask the heuristic for ranked
//! engine configurations, finalise the first one that builds into an
//! execution plan, and execute that plan with a variant pack of device
//! pointers. For bf16 on Hopper it picks the same `sm90_xmma_*` kernels the
//! legacy entry points reach (Nsight Compute, DEVELOPERS.md "cuDNN
//! convolutions"); for f32 its engines were faster. Plans are built once
//! per kernel and pointer alignment and cached by the caller; executing one
//! launches only device work on the handle's stream, so a graph capture
//! records it.

use std::ffi::c_void;

use cudarc::cudnn::result::CudnnError;
use cudarc::cudnn::sys as ds;
use fusegraph_core::graph::op::ConvPass;
use fusegraph_core::schedule::ConvBody;

use ds::cudnnBackendAttributeName_t as A;
use ds::cudnnBackendAttributeType_t as T;
use ds::cudnnBackendDescriptorType_t as D;

/// Tensor ids in the variant pack: the activation, the filter and the
/// output-shaped tensor, whatever the pass (backward-data writes `X`,
/// backward-filter writes `W`).
const X: i64 = 1;
const W: i64 = 2;
const Y: i64 = 3;

/// How many ranked configurations are tried before giving up.
const MAX_CONFIGS: usize = 32;

fn check(status: ds::cudnnStatus_t) -> Result<(), CudnnError> {
    match status {
        ds::cudnnStatus_t::CUDNN_STATUS_SUCCESS => Ok(()),
        e => Err(CudnnError(e)),
    }
}

/// An owned backend descriptor, destroyed on drop.
struct Desc(ds::cudnnBackendDescriptor_t);

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: created by `Desc::new` and destroyed only here.
        unsafe {
            let _ = ds::cudnnBackendDestroyDescriptor(self.0);
        }
    }
}

impl Desc {
    fn new(kind: D) -> Result<Desc, CudnnError> {
        let mut d = std::ptr::null_mut();
        // SAFETY: cuDNN writes a fresh descriptor into `d`.
        check(unsafe { ds::cudnnBackendCreateDescriptor(kind, &mut d) })?;
        Ok(Desc(d))
    }

    /// Sets attribute `name` to the elements of `values`, which must have
    /// the C layout that `ty` names.
    fn set<V>(&self, name: A, ty: T, values: &[V]) -> Result<(), CudnnError> {
        // SAFETY: `values` is a live slice of `values.len()` elements of the
        // type `ty` describes; cuDNN copies them before returning.
        check(unsafe {
            ds::cudnnBackendSetAttribute(
                self.0,
                name,
                ty,
                values.len() as i64,
                values.as_ptr() as *const c_void,
            )
        })
    }

    fn set_desc(&self, name: A, d: &Desc) -> Result<(), CudnnError> {
        self.set(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR, &[d.0])
    }

    fn finalize(&self) -> Result<(), CudnnError> {
        // SAFETY: a live descriptor whose attributes were set above.
        check(unsafe { ds::cudnnBackendFinalize(self.0) })
    }

    /// Reads up to `out.len()` elements of attribute `name`; returns how many
    /// cuDNN has.
    fn get<V>(&self, name: A, ty: T, out: &mut [V]) -> Result<usize, CudnnError> {
        let mut count = 0i64;
        // SAFETY: `out` has room for `out.len()` elements of type `ty`.
        check(unsafe {
            ds::cudnnBackendGetAttribute(
                self.0,
                name,
                ty,
                out.len() as i64,
                &mut count,
                out.as_mut_ptr() as *mut c_void,
            )
        })?;
        Ok(count.max(0) as usize)
    }
}

/// Dimensions in cuDNN's logical NCHW order and strides of the NHWC (or
/// KRSC) packing fusegraph stores, from a `[n, h, w, c]` shape.
fn nhwc(shape: [usize; 4]) -> ([i64; 4], [i64; 4]) {
    let [n, h, w, c] = shape.map(|v| v as i64);
    ([n, c, h, w], [h * w * c, 1, w * c, c])
}

fn tensor(
    uid: i64,
    shape: [usize; 4],
    dt: ds::cudnnDataType_t,
    align: i64,
) -> Result<Desc, CudnnError> {
    let t = Desc::new(D::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    let (dims, strides) = nhwc(shape);
    t.set(
        A::CUDNN_ATTR_TENSOR_DATA_TYPE,
        T::CUDNN_TYPE_DATA_TYPE,
        &[dt],
    )?;
    t.set(A::CUDNN_ATTR_TENSOR_DIMENSIONS, T::CUDNN_TYPE_INT64, &dims)?;
    t.set(A::CUDNN_ATTR_TENSOR_STRIDES, T::CUDNN_TYPE_INT64, &strides)?;
    t.set(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, T::CUDNN_TYPE_INT64, &[uid])?;
    t.set(
        A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
        T::CUDNN_TYPE_INT64,
        &[align],
    )?;
    t.finalize()?;
    Ok(t)
}

fn convolution(c: &ConvBody) -> Result<Desc, CudnnError> {
    let d = Desc::new(D::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)?;
    let g = c.geometry;
    // Accumulation is float32 for every storage type, as on the legacy path.
    let comp = ds::cudnnDataType_t::CUDNN_DATA_FLOAT;
    d.set(
        A::CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
        T::CUDNN_TYPE_DATA_TYPE,
        &[comp],
    )?;
    let mode = ds::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION;
    d.set(
        A::CUDNN_ATTR_CONVOLUTION_CONV_MODE,
        T::CUDNN_TYPE_CONVOLUTION_MODE,
        &[mode],
    )?;
    d.set(
        A::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
        T::CUDNN_TYPE_INT64,
        &[2i64],
    )?;
    // Symmetric padding: the same amount before and after.
    for (name, v) in [
        (A::CUDNN_ATTR_CONVOLUTION_DILATIONS, g.dilation),
        (A::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, g.stride),
        (A::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, g.padding),
        (A::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, g.padding),
    ] {
        d.set(name, T::CUDNN_TYPE_INT64, &v.map(|x| x as i64))?;
    }
    d.finalize()?;
    Ok(d)
}

/// The operation descriptor of `pass` over tensors `x`, `w`, `y`.
fn operation(
    pass: ConvPass,
    conv: &Desc,
    x: &Desc,
    w: &Desc,
    y: &Desc,
) -> Result<Desc, CudnnError> {
    let (kind, [ax, aw, ay, ac, alpha, beta]) = match pass {
        ConvPass::Forward => (
            D::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
            [
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
            ],
        ),
        ConvPass::BackwardData => (
            D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
            [
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
            ],
        ),
        ConvPass::BackwardFilter => (
            D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
            [
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
            ],
        ),
    };
    let op = Desc::new(kind)?;
    op.set_desc(ax, x)?;
    op.set_desc(aw, w)?;
    op.set_desc(ay, y)?;
    op.set_desc(ac, conv)?;
    op.set(alpha, T::CUDNN_TYPE_FLOAT, &[1.0f32])?;
    op.set(beta, T::CUDNN_TYPE_FLOAT, &[0.0f32])?;
    op.finalize()?;
    Ok(op)
}

/// Whether engine configuration `cfg` keeps float32 exact: no tensor-core
/// (TF32) math and no down-converted inputs.
fn keeps_f32_exact(cfg: &Desc) -> Result<bool, CudnnError> {
    let engine = engine_of(cfg)?;
    let mut notes = [ds::cudnnBackendNumericalNote_t::CUDNN_NUMERICAL_NOTE_TYPE_COUNT; 16];
    let n = engine.get(
        A::CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
        T::CUDNN_TYPE_NUMERICAL_NOTE,
        &mut notes,
    )?;
    use ds::cudnnBackendNumericalNote_t as N;
    Ok(!notes[..n.min(notes.len())].iter().any(|note| {
        matches!(
            note,
            N::CUDNN_NUMERICAL_NOTE_TENSOR_CORE | N::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS
        )
    }))
}

/// The engine a configuration runs.
fn engine_of(cfg: &Desc) -> Result<Desc, CudnnError> {
    let engine = Desc::new(D::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    let mut raw = [engine.0];
    cfg.get(
        A::CUDNN_ATTR_ENGINECFG_ENGINE,
        T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
        &mut raw,
    )?;
    Ok(engine)
}

/// The global index of the engine a configuration runs (for the log).
fn engine_index(cfg: &Desc) -> Result<i64, CudnnError> {
    let engine = engine_of(cfg)?;
    let mut index = [0i64];
    engine.get(
        A::CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
        T::CUDNN_TYPE_INT64,
        &mut index,
    )?;
    Ok(index[0])
}

/// The byte alignment cuDNN may assume for a pointer: its largest power of
/// two, at most 16 (what vectorised engines ask for).
pub(super) fn alignment(ptr: u64) -> u8 {
    if ptr == 0 {
        return 16;
    }
    (1u64 << ptr.trailing_zeros().min(4)) as u8
}

/// A finalised execution plan and the descriptors it was built from (kept
/// alive for as long as the plan is).
pub(super) struct GraphPlan {
    plan: Desc,
    pub(super) workspace: usize,
    _parts: Vec<Desc>,
}

// SAFETY: the descriptors are host objects that cuDNN only reads during a
// call; calls are serialised by the backend's lock.
unsafe impl Send for GraphPlan {}
unsafe impl Sync for GraphPlan {}

impl GraphPlan {
    /// Builds the plan for `c` with data type `dt`, tensors aligned to
    /// `align` bytes (x, w, y). `Ok(None)` when no ranked engine builds
    /// within `max_workspace` bytes (or, with `exact`, without TF32), so the
    /// caller can fall back to the legacy API.
    pub(super) fn build(
        handle: ds::cudnnHandle_t,
        c: &ConvBody,
        dt: ds::cudnnDataType_t,
        exact: bool,
        align: [u8; 3],
        max_workspace: usize,
    ) -> Result<Option<GraphPlan>, CudnnError> {
        let x = tensor(X, c.x, dt, align[0] as i64)?;
        let w = tensor(W, c.w, dt, align[1] as i64)?;
        let y = tensor(Y, c.y, dt, align[2] as i64)?;
        let conv = convolution(c)?;
        let op = operation(c.pass, &conv, &x, &w, &y)?;
        let graph = Desc::new(D::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
        graph.set(
            A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
            T::CUDNN_TYPE_HANDLE,
            &[handle],
        )?;
        graph.set_desc(A::CUDNN_ATTR_OPERATIONGRAPH_OPS, &op)?;
        graph.finalize()?;
        let heur = Desc::new(D::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
        heur.set_desc(A::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &graph)?;
        // Mode A is the fast ranking PyTorch uses without benchmarking; no
        // trial runs, so nothing executes while a graph is being recorded.
        // `FUSEGRAPH_CUDNN_HEUR=b` asks mode B (a slower, learned ranking;
        // also no trial runs), to compare.
        let mode = if std::env::var("FUSEGRAPH_CUDNN_HEUR").is_ok_and(|v| v == "b") {
            ds::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_B
        } else {
            ds::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A
        };
        heur.set(
            A::CUDNN_ATTR_ENGINEHEUR_MODE,
            T::CUDNN_TYPE_HEUR_MODE,
            &[mode],
        )?;
        heur.finalize()?;
        let cfgs = (0..MAX_CONFIGS)
            .map(|_| Desc::new(D::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))
            .collect::<Result<Vec<_>, _>>()?;
        let mut raw: Vec<_> = cfgs.iter().map(|d| d.0).collect();
        let n = heur.get(
            A::CUDNN_ATTR_ENGINEHEUR_RESULTS,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            &mut raw,
        )?;
        for (rank, cfg) in cfgs.iter().take(n).enumerate() {
            if exact && !keeps_f32_exact(cfg).unwrap_or(false) {
                continue;
            }
            let plan = Desc::new(D::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
            plan.set(
                A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                T::CUDNN_TYPE_HANDLE,
                &[handle],
            )?;
            plan.set_desc(A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg)?;
            // An engine the heuristic ranks may still not support this
            // problem; the next one is tried.
            if plan.finalize().is_err() {
                continue;
            }
            let mut bytes = [0i64];
            plan.get(
                A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                T::CUDNN_TYPE_INT64,
                &mut bytes,
            )?;
            let workspace = bytes[0].max(0) as usize;
            if workspace > max_workspace {
                continue;
            }
            if std::env::var_os("FUSEGRAPH_CUDNN_LOG").is_some() {
                eprintln!(
                    "cudnn graph {} x {:?} w {:?} y {:?}: config {rank} of {n}, engine {}, workspace {workspace} B",
                    c.pass.name(),
                    c.x,
                    c.w,
                    c.y,
                    engine_index(cfg).map_or("?".into(), |i| i.to_string()),
                );
            }
            return Ok(Some(GraphPlan {
                plan,
                workspace,
                _parts: vec![x, w, y, conv, op, graph, heur],
            }));
        }
        Ok(None)
    }

    /// Runs the plan on `handle`'s stream. `ptrs` are the x-, w- and
    /// y-shaped tensors in that order (which one is written depends on the
    /// pass); `workspace` has at least `self.workspace` bytes.
    ///
    /// # Safety
    /// The pointers must be live device buffers of the planned shapes and
    /// alignments, ordered on the handle's stream.
    pub(super) unsafe fn run(
        &self,
        handle: ds::cudnnHandle_t,
        ptrs: [*mut c_void; 3],
        workspace: *mut c_void,
    ) -> Result<(), CudnnError> {
        let pack = Desc::new(D::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
        pack.set(
            A::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
            T::CUDNN_TYPE_INT64,
            &[X, W, Y],
        )?;
        pack.set(
            A::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
            T::CUDNN_TYPE_VOID_PTR,
            &ptrs,
        )?;
        pack.set(
            A::CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
            T::CUDNN_TYPE_VOID_PTR,
            &[workspace],
        )?;
        pack.finalize()?;
        check(ds::cudnnBackendExecute(handle, self.plan.0, pack.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nhwc_strides_describe_the_packed_layout() {
        // [n, h, w, c] = [2, 5, 7, 3]: channels fastest, then width, height.
        let (dims, strides) = nhwc([2, 5, 7, 3]);
        assert_eq!(dims, [2, 3, 5, 7]);
        assert_eq!(strides, [105, 1, 21, 3]);
    }

    #[test]
    fn alignment_is_the_pointers_power_of_two_up_to_16() {
        assert_eq!(alignment(0x1000), 16);
        assert_eq!(alignment(0x1008), 8);
        assert_eq!(alignment(0x1002), 2);
        assert_eq!(alignment(0x1001), 1);
    }
}
