//! Convolutions through cuDNN: the three passes of a `Body::Conv` kernel
//! (forward, backward-data, backward-filter) on NHWC activations and
//! `[o, kh, kw, c]` filters, so the windows are read in place instead of
//! being copied out as an im2col matrix. The legacy entry points run each
//! pass; with `FUSEGRAPH_CUDNN=graph` it runs as a cuDNN operation graph
//! instead (`dnn_graph.rs`), and the legacy API only where no graph engine
//! builds. Plans are made once per kernel (and operand alignment, for graph
//! plans) and cached; the workspace comes from the caching allocator in
//! stream order, so the calls are recorded by a graph capture like any
//! other launch.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::cudnn::result::CudnnError;
use cudarc::cudnn::{result as dr, sys as ds};
use cudarc::driver::sys as drv;
use fusegraph_core::graph::op::ConvPass;
use fusegraph_core::schedule::{ConvBody, Kernel};
use fusegraph_core::{DType, Error, Layout, Result};

use super::alloc::CudaBuffer;
use super::blas::{matmul_precision, Precision};
use super::dnn_graph::{alignment, GraphPlan};

/// Algorithms that need more scratch than this are passed over.
const MAX_WORKSPACE: usize = 1 << 30;

fn failed(op: &'static str, what: &str, e: CudnnError) -> Error {
    match e.0 {
        ds::cudnnStatus_t::CUDNN_STATUS_ALLOC_FAILED => Error::OutOfMemory {
            op,
            device: "cuda".into(),
            bytes: 0,
            why: format!("cuDNN {e:?} for {what}"),
        },
        _ => Error::Backend {
            op,
            message: format!("cuDNN {e:?} for {what}"),
        },
    }
}

/// The algorithm a pass runs, one enum per pass in cuDNN.
#[derive(Clone, Copy)]
enum Algo {
    Forward(ds::cudnnConvolutionFwdAlgo_t),
    Data(ds::cudnnConvolutionBwdDataAlgo_t),
    Filter(ds::cudnnConvolutionBwdFilterAlgo_t),
}

/// Descriptors and algorithm of one conv kernel on the legacy API.
struct Plan {
    x: ds::cudnnTensorDescriptor_t,
    y: ds::cudnnTensorDescriptor_t,
    w: ds::cudnnFilterDescriptor_t,
    conv: ds::cudnnConvolutionDescriptor_t,
    algo: Algo,
    workspace: usize,
}

// SAFETY: the descriptors are plain host objects that cuDNN only reads
// during a call; calls are serialised by the backend's lock.
unsafe impl Send for Plan {}
unsafe impl Sync for Plan {}

impl Drop for Plan {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created by this plan and is not used after.
        unsafe {
            let _ = dr::destroy_tensor_descriptor(self.x);
            let _ = dr::destroy_tensor_descriptor(self.y);
            let _ = dr::destroy_filter_descriptor(self.w);
            let _ = dr::destroy_convolution_descriptor(self.conv);
        }
    }
}

/// How one conv kernel runs: an execution plan of the graph API, or the
/// legacy API's descriptors and algorithm.
enum Route {
    Graph(GraphPlan),
    Legacy(Plan),
}

struct Cached {
    route: Route,
    /// Keeps the kernel alive so its address (the cache key) is not reused.
    _kernel: Arc<Kernel>,
}

impl Cached {
    fn workspace(&self) -> usize {
        match &self.route {
            Route::Graph(g) => g.workspace,
            Route::Legacy(p) => p.workspace,
        }
    }
}

/// Plans are keyed by kernel and by the byte alignment of its x-, w- and
/// y-shaped operands, which graph plans are built for.
type PlanKey = (usize, [u8; 3]);

/// A cuDNN handle on the backend's stream and its plans.
pub(crate) struct Dnn {
    handle: ds::cudnnHandle_t,
    plans: Mutex<HashMap<PlanKey, Arc<Cached>>>,
    /// `FUSEGRAPH_CUDNN=graph`: try the graph API first. Opt-in: for bf16
    /// it runs the same kernels as the legacy API, so the captured
    /// ResNet-18 step was no faster on an H100 (f32 eager was 12% faster);
    /// see DEVELOPERS.md, "cuDNN convolutions".
    use_graph: bool,
    pub(crate) version: usize,
}

// SAFETY: the handle is used under the backend's lock only.
unsafe impl Send for Dnn {}
unsafe impl Sync for Dnn {}

impl Drop for Dnn {
    fn drop(&mut self) {
        // SAFETY: the handle was created here and plans hold no reference to it.
        unsafe {
            let _ = dr::destroy_handle(self.handle);
        }
    }
}

fn data_type(op: &'static str, dtype: DType) -> Result<ds::cudnnDataType_t> {
    use ds::cudnnDataType_t as T;
    Ok(match dtype {
        DType::F32 => T::CUDNN_DATA_FLOAT,
        DType::F16 => T::CUDNN_DATA_HALF,
        DType::BF16 => T::CUDNN_DATA_BFLOAT16,
        d => {
            return Err(Error::UnsupportedDType {
                op,
                dtype: d,
                why: "cuDNN convolutions take f32, f16 or bf16",
            })
        }
    })
}

fn int(v: usize) -> i32 {
    v.min(i32::MAX as usize) as i32
}

/// The address of element `l.offset` of a buffer at `ptr`, after checking
/// that `l` reads it contiguously (cuDNN's NHWC / KRSC packing).
fn operand(op: &'static str, ptr: u64, l: &Layout, dtype: DType) -> Result<*mut c_void> {
    // Size-1 axes may carry any stride: they never move the address.
    if !l.is_contiguous() {
        return Err(Error::Backend {
            op,
            message: format!(
                "cuDNN operands must be contiguous, got shape {:?} strides {:?}",
                l.shape, l.strides
            ),
        });
    }
    Ok((ptr + (l.offset * dtype.size_in_bytes()) as u64) as *mut c_void)
}

impl Dnn {
    /// A handle bound to `stream` (the context must be current).
    pub(crate) fn new(stream: drv::CUstream) -> Result<Dnn> {
        let handle = dr::create_handle().map_err(|e| failed("cudnn", "create handle", e))?;
        // SAFETY: a live handle and the backend's stream, which outlives it.
        unsafe { dr::set_stream(handle, stream as ds::cudaStream_t) }
            .map_err(|e| failed("cudnn", "set stream", e))?;
        Ok(Dnn {
            handle,
            plans: Mutex::new(HashMap::new()),
            use_graph: std::env::var("FUSEGRAPH_CUDNN").is_ok_and(|v| v == "graph"),
            version: dr::get_version(),
        })
    }

    fn plan(&self, k: &Arc<Kernel>, c: &ConvBody, align: [u8; 3]) -> Result<Arc<Cached>> {
        let key = (Arc::as_ptr(k) as usize, align);
        let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = plans.get(&key) {
            return Ok(p.clone());
        }
        let route = match self.graph_plan(k, c, align)? {
            Some(g) => Route::Graph(g),
            None => Route::Legacy(self.legacy_plan(k, c)?),
        };
        let p = Arc::new(Cached {
            route,
            _kernel: k.clone(),
        });
        plans.insert(key, p.clone());
        Ok(p)
    }

    /// float32 stays exact unless TF32 was opted into, as for matmul.
    fn exact(k: &Kernel) -> bool {
        k.out_dtype == DType::F32 && matmul_precision() != Precision::Tf32
    }

    fn graph_plan(&self, k: &Kernel, c: &ConvBody, align: [u8; 3]) -> Result<Option<GraphPlan>> {
        if !self.use_graph {
            return Ok(None);
        }
        let op = c.pass.name();
        let dt = data_type(op, k.out_dtype)?;
        match GraphPlan::build(self.handle, c, dt, Self::exact(k), align, MAX_WORKSPACE) {
            Ok(plan) => Ok(plan),
            // Out of memory is the user's to see; any other refusal (an
            // older cuDNN, a problem its graph engines do not take) leaves
            // the legacy API to run the pass.
            Err(e) if e.0 == ds::cudnnStatus_t::CUDNN_STATUS_ALLOC_FAILED => {
                Err(failed(op, "graph plan", e))
            }
            Err(_) => Ok(None),
        }
    }

    fn legacy_plan(&self, k: &Kernel, c: &ConvBody) -> Result<Plan> {
        let op = c.pass.name();
        let what = format!("{op} x {:?} w {:?} y {:?} {:?}", c.x, c.w, c.y, c.geometry);
        let err = |e| failed(op, &what, e);
        let dt = data_type(op, k.out_dtype)?;
        let nhwc = ds::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC;
        // SAFETY: descriptors are created, filled and owned by the plan
        // (dropped with it if a later step fails).
        unsafe {
            let mut plan = Plan {
                x: dr::create_tensor_descriptor().map_err(err)?,
                y: dr::create_tensor_descriptor().map_err(err)?,
                w: dr::create_filter_descriptor().map_err(err)?,
                conv: dr::create_convolution_descriptor().map_err(err)?,
                algo: Algo::Forward(
                    ds::cudnnConvolutionFwdAlgo_t::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                ),
                workspace: 0,
            };
            let [n, h, w, ch] = c.x.map(int);
            dr::set_tensor4d_descriptor(plan.x, nhwc, dt, [n, ch, h, w]).map_err(err)?;
            let [n, oh, ow, o] = c.y.map(int);
            dr::set_tensor4d_descriptor(plan.y, nhwc, dt, [n, o, oh, ow]).map_err(err)?;
            let [o, kh, kw, ch] = c.w.map(int);
            dr::set_filter4d_descriptor(plan.w, dt, nhwc, [o, ch, kh, kw]).map_err(err)?;
            let g = c.geometry;
            dr::set_convolution2d_descriptor(
                plan.conv,
                int(g.padding[0]),
                int(g.padding[1]),
                int(g.stride[0]),
                int(g.stride[1]),
                int(g.dilation[0]),
                int(g.dilation[1]),
                ds::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
                ds::cudnnDataType_t::CUDNN_DATA_FLOAT,
            )
            .map_err(err)?;
            let exact = Self::exact(k);
            let math = if exact {
                ds::cudnnMathType_t::CUDNN_FMA_MATH
            } else {
                ds::cudnnMathType_t::CUDNN_TENSOR_OP_MATH
            };
            dr::set_convolution_math_type(plan.conv, math).map_err(err)?;
            let usable = |status: ds::cudnnStatus_t, memory: usize, m: ds::cudnnMathType_t| {
                status == ds::cudnnStatus_t::CUDNN_STATUS_SUCCESS
                    && memory <= MAX_WORKSPACE
                    && !(exact && m != ds::cudnnMathType_t::CUDNN_FMA_MATH)
            };
            // The heuristic's ranking (no trial runs, so nothing runs on the
            // device while a graph is being recorded): the first usable one.
            // One arm per pass; they differ in the query and the perf type.
            macro_rules! choose {
                ($perf:ty, $variant:path, |$n:ident, $count:ident, $out:ident| $query:expr) => {{
                    const N: usize = 16;
                    let mut perf = [std::mem::zeroed::<$perf>(); N];
                    let mut count = 0;
                    let ($n, $count, $out) = (N as i32, &mut count, perf.as_mut_ptr());
                    $query.map_err(err)?;
                    let best = perf[..count.max(0) as usize]
                        .iter()
                        .find(|p| usable(p.status, p.memory, p.mathType))
                        .ok_or_else(|| none(op, &what))?;
                    plan.workspace = best.memory;
                    $variant(best.algo)
                }};
            }
            let (h, x, y, w, conv) = (self.handle, plan.x, plan.y, plan.w, plan.conv);
            plan.algo = match c.pass {
                ConvPass::Forward => choose!(
                    ds::cudnnConvolutionFwdAlgoPerf_t,
                    Algo::Forward,
                    |n, count, out| dr::get_convolution_forward_algorithm(
                        h, x, w, conv, y, n, count, out
                    )
                ),
                ConvPass::BackwardData => choose!(
                    ds::cudnnConvolutionBwdDataAlgoPerf_t,
                    Algo::Data,
                    |n, count, out| dr::get_convolution_backward_data_algorithm(
                        h, w, y, conv, x, n, count, out
                    )
                ),
                ConvPass::BackwardFilter => choose!(
                    ds::cudnnConvolutionBwdFilterAlgoPerf_t,
                    Algo::Filter,
                    |n, count, out| dr::get_convolution_backward_filter_algorithm(
                        h, x, y, conv, w, n, count, out
                    )
                ),
            };
            Ok(plan)
        }
    }

    /// Runs conv kernel `k`; `ptrs` are its two inputs and its output.
    /// `alloc` gives the workspace (stream-ordered, released after the call).
    pub(crate) fn run(
        &self,
        k: &Arc<Kernel>,
        c: &ConvBody,
        ptrs: &[u64],
        alloc: impl FnOnce(usize) -> Result<CudaBuffer>,
    ) -> Result<()> {
        let op = c.pass.name();
        let [pa, pb, out] = ptrs else {
            return Err(Error::Backend {
                op,
                message: format!(
                    "expected 2 inputs and an output, got {} pointers",
                    ptrs.len()
                ),
            });
        };
        let dt = k.out_dtype;
        let a = operand(op, *pa, &c.a, dt)?;
        let b = operand(op, *pb, &c.b, dt)?;
        let out = *out as *mut c_void;
        // The operands in x, w, y order (which one is written is the pass's).
        let xwy = match c.pass {
            ConvPass::Forward => [a, b, out],
            ConvPass::BackwardData => [out, b, a],
            ConvPass::BackwardFilter => [a, out, b],
        };
        // Only graph plans depend on alignment; legacy ones take one key.
        let align = match self.use_graph {
            true => xwy.map(|p| alignment(p as u64)),
            false => [0; 3],
        };
        let plan = self.plan(k, c, align)?;
        let scratch = match plan.workspace() {
            0 => None,
            bytes => Some(alloc(bytes)?),
        };
        let ws = scratch
            .as_ref()
            .map_or(std::ptr::null_mut(), |s| s.ptr() as *mut c_void);
        let (one, zero) = (1.0f32, 0.0f32);
        let (alpha, beta) = (
            &one as *const f32 as *const c_void,
            &zero as *const f32 as *const c_void,
        );
        let what = || format!("{op} x {:?} w {:?} y {:?}", c.x, c.w, c.y);
        let plan = match &plan.route {
            // SAFETY: the plan was built for these shapes and alignments, and
            // the pointers are live device buffers of those sizes (checked by
            // the executor), ordered on the handle's stream.
            Route::Graph(g) => {
                return unsafe { g.run(self.handle, xwy, ws) }.map_err(|e| failed(op, &what(), e))
            }
            Route::Legacy(p) => p,
        };
        // SAFETY: as above, for the legacy descriptors.
        unsafe {
            match plan.algo {
                Algo::Forward(algo) => dr::convolution_forward(
                    self.handle,
                    alpha,
                    plan.x,
                    a,
                    plan.w,
                    b,
                    plan.conv,
                    algo,
                    ws,
                    plan.workspace,
                    beta,
                    plan.y,
                    out,
                ),
                Algo::Data(algo) => dr::convolution_backward_data(
                    self.handle,
                    alpha,
                    plan.w,
                    b,
                    plan.y,
                    a,
                    plan.conv,
                    algo,
                    ws,
                    plan.workspace,
                    beta,
                    plan.x,
                    out,
                ),
                Algo::Filter(algo) => dr::convolution_backward_filter(
                    self.handle,
                    alpha,
                    plan.x,
                    a,
                    plan.y,
                    b,
                    plan.conv,
                    algo,
                    ws,
                    plan.workspace,
                    beta,
                    plan.w,
                    out,
                ),
            }
        }
        .map_err(|e| failed(op, &what(), e))
    }
}

fn none(op: &'static str, what: &str) -> Error {
    Error::Backend {
        op,
        message: format!("cuDNN offers no algorithm for {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_are_contiguous_up_to_size_one_axes() {
        // A 1x1 filter [o, 1, 1, c]: its size-1 axes may carry any stride.
        let filter = Layout {
            shape: vec![128, 1, 1, 64],
            strides: vec![64, 1, 1, 1],
            offset: 2,
        };
        let p = operand("conv2d", 1024, &filter, DType::BF16).map(|p| p as u64);
        assert_eq!(p.ok(), Some(1024 + 2 * 2));
        // A transposed view is refused, naming its strides.
        let mut t = Layout::contiguous(&[4, 8]);
        t.shape = vec![8, 4];
        t.strides = vec![1, 8];
        let err = operand("conv2d", 0, &t, DType::F32).unwrap_err();
        assert!(err.to_string().contains("[1, 8]"), "{err}");
    }
}
