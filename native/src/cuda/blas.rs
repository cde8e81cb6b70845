//! Matmul through cuBLASLt: one call per kernel (strided batched for
//! `bmm`), with descriptors and the heuristic's algorithm cached per kernel
//! and operand alignment, and the epilogue fused or finished by a
//! generated kernel (see [`gemm_plan`](super::gemm_plan)).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::cublaslt::{result as lt, sys as lts};
use cudarc::driver::sys as drv;
use fusegraph_core::schedule::Kernel;
use fusegraph_core::{DType, Result};

use super::alloc::CudaBuffer;
use super::error;
use super::gemm_plan::{self, Activation, Epilogue, GemmPlan, Operand};

/// How float32 matrix products may round, like PyTorch's
/// `torch.set_float32_matmul_precision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Full float32 products (the default; what the conformance suite checks).
    #[default]
    Highest,
    /// TF32 tensor cores: 10-bit mantissa operands, float32 accumulation
    /// (about 3e-4 relative error; many times faster).
    Tf32,
}

static PRECISION: AtomicU8 = AtomicU8::new(0);

/// Sets the float32 matmul precision for every CUDA device of the process.
pub fn set_matmul_precision(p: Precision) {
    PRECISION.store(p as u8, Ordering::Relaxed);
}

/// The float32 matmul precision in effect.
pub fn matmul_precision() -> Precision {
    match PRECISION.load(Ordering::Relaxed) {
        1 => Precision::Tf32,
        _ => Precision::Highest,
    }
}

/// Workspace cuBLASLt may use (what NVIDIA suggests for Hopper).
const WORKSPACE: usize = 32 << 20;

fn data_type(d: DType) -> lts::cudaDataType {
    match d {
        DType::F64 => lts::cudaDataType::CUDA_R_64F,
        DType::F16 => lts::cudaDataType::CUDA_R_16F,
        DType::BF16 => lts::cudaDataType::CUDA_R_16BF,
        _ => lts::cudaDataType::CUDA_R_32F,
    }
}

/// Largest power of two (up to 256) dividing the address.
fn alignment(ptr: u64) -> u32 {
    if ptr == 0 {
        return 256;
    }
    (1u64 << ptr.trailing_zeros().min(8)) as u32
}

/// A ready cuBLASLt call: descriptors, the chosen algorithm, and what to
/// do with the result.
pub(crate) struct Gemm {
    plan: GemmPlan,
    desc: lts::cublasLtMatmulDesc_t,
    x_layout: lts::cublasLtMatrixLayout_t,
    y_layout: lts::cublasLtMatrixLayout_t,
    d_layout: lts::cublasLtMatrixLayout_t,
    algo: lts::cublasLtMatmulAlgo_t,
    /// The generated epilogue kernel over scratch (kept alive for the kernel cache).
    pub(crate) epilogue: Option<Arc<Kernel>>,
}

// SAFETY: descriptors are only used under the backend's execution lock.
unsafe impl Send for Gemm {}
unsafe impl Sync for Gemm {}

impl Drop for Gemm {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created once by `Gemm::new` and is destroyed once.
        unsafe {
            let _ = lt::destroy_matrix_layout(self.x_layout);
            let _ = lt::destroy_matrix_layout(self.y_layout);
            let _ = lt::destroy_matrix_layout(self.d_layout);
            let _ = lt::destroy_matmul_desc(self.desc);
        }
    }
}

type Key = (usize, [u32; 4], Precision);
/// A plan keeps its kernel alive, so the kernel's address stays a valid key.
type Plans = HashMap<Key, (Arc<Kernel>, Option<Arc<Gemm>>)>;

/// One device's cuBLASLt handle, workspace and plan cache.
pub(crate) struct Blas {
    handle: lts::cublasLtHandle_t,
    workspace: CudaBuffer,
    plans: Mutex<Plans>,
    device: String,
}

// SAFETY: the handle is used only under the backend's execution lock.
unsafe impl Send for Blas {}
unsafe impl Sync for Blas {}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: created once in `Blas::new`.
        unsafe {
            let _ = lt::destroy_handle(self.handle);
        }
    }
}

fn layout(
    dtype: DType,
    op: &Operand,
    batch: u64,
) -> std::result::Result<lts::cublasLtMatrixLayout_t, lt::CublasError> {
    let l = lt::create_matrix_layout(data_type(dtype), op.rows, op.cols, op.ld)?;
    set_batch(l, batch, op.batch_stride)?;
    Ok(l)
}

fn set_batch(
    l: lts::cublasLtMatrixLayout_t,
    batch: u64,
    stride: i64,
) -> std::result::Result<(), lt::CublasError> {
    if batch <= 1 {
        return Ok(());
    }
    let count = batch as i32;
    // SAFETY: attribute values are live locals of the documented types.
    unsafe {
        lt::set_matrix_layout_attribute(
            l,
            lts::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
            &count as *const i32 as *const c_void,
            std::mem::size_of::<i32>(),
        )?;
        lt::set_matrix_layout_attribute(
            l,
            lts::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
            &stride as *const i64 as *const c_void,
            std::mem::size_of::<i64>(),
        )
    }
}

fn desc_attr<T>(
    desc: lts::cublasLtMatmulDesc_t,
    attr: lts::cublasLtMatmulDescAttributes_t,
    v: &T,
) -> std::result::Result<(), lt::CublasError> {
    // SAFETY: `v` is a live value of the attribute's type.
    unsafe {
        lt::set_matmul_desc_attribute(
            desc,
            attr,
            v as *const T as *const c_void,
            std::mem::size_of::<T>(),
        )
    }
}

impl Blas {
    /// A handle and workspace (the context must be current).
    pub(crate) fn new(workspace: CudaBuffer, device: String) -> Result<Blas> {
        let handle =
            lt::create_handle().map_err(|e| error::cublas("cublaslt", "create handle", e))?;
        Ok(Blas {
            handle,
            workspace,
            plans: Mutex::new(HashMap::new()),
            device,
        })
    }

    /// The cuBLASLt call for `k` with these argument pointers, or `None`
    /// when the generated kernel should run it.
    pub(crate) fn gemm(&self, k: &Arc<Kernel>, ptrs: &[u64]) -> Result<Option<Arc<Gemm>>> {
        let align = |i: usize| ptrs.get(i).map_or(256, |&p| alignment(p));
        // The bias (if any) is checked at call time; operands and output key the plan.
        let precision = matmul_precision();
        let out = ptrs.len().saturating_sub(1);
        let key: Key = (
            Arc::as_ptr(k) as usize,
            [align(0), align(1), align(out), 0],
            precision,
        );
        let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, g)) = plans.get(&key) {
            return Ok(g.clone());
        }
        if plans.len() > 4096 {
            plans.clear();
        }
        let gemm = match gemm_plan::plan(k) {
            Some(plan) => self.prepare(plan, ptrs, precision)?,
            None => None,
        };
        plans.insert(key, (k.clone(), gemm.clone()));
        Ok(gemm)
    }

    fn prepare(
        &self,
        plan: GemmPlan,
        ptrs: &[u64],
        precision: Precision,
    ) -> Result<Option<Arc<Gemm>>> {
        let what = format!(
            "{}x{}x{} batch {} {}",
            plan.m, plan.n, plan.k, plan.batch, plan.dtype
        );
        let e = |err| error::cublas("cublaslt", &what, err);
        let compute = match plan.dtype {
            DType::F64 => lts::cublasComputeType_t::CUBLAS_COMPUTE_64F,
            DType::F32 if precision == Precision::Tf32 => {
                lts::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
            }
            _ => lts::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        };
        let scale = if plan.dtype == DType::F64 {
            lts::cudaDataType::CUDA_R_64F
        } else {
            lts::cudaDataType::CUDA_R_32F
        };
        let desc = lt::create_matmul_desc(compute, scale).map_err(e)?;
        let elem = |d: DType| d.size_in_bytes() as u64;
        let x_layout = layout(plan.dtype, &plan.x, plan.batch).map_err(e)?;
        let y_layout = layout(plan.dtype, &plan.y, plan.batch).map_err(e)?;
        let d_op = Operand {
            arg: 0,
            transpose: false,
            rows: plan.n,
            cols: plan.m,
            ld: plan.n as i64,
            batch_stride: (plan.m * plan.n) as i64,
            offset: 0,
        };
        let d_layout = layout(plan.d_dtype, &d_op, plan.batch).map_err(e)?;
        let mut gemm = Gemm {
            plan,
            desc,
            x_layout,
            y_layout,
            d_layout,
            // SAFETY: a plain-data struct that the heuristic overwrites.
            algo: unsafe { std::mem::zeroed() },
            epilogue: None,
        };
        let p = &gemm.plan;
        let ta = p.x.transpose as i32;
        let tb = p.y.transpose as i32;
        desc_attr(
            desc,
            lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
            &ta,
        )
        .map_err(e)?;
        desc_attr(
            desc,
            lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
            &tb,
        )
        .map_err(e)?;
        if let Epilogue::Fused { act, bias } = &p.epilogue {
            let ep = match (act, bias.is_some()) {
                (Activation::None, false) => lts::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT,
                (Activation::None, true) => lts::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
                (Activation::Relu, false) => lts::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU,
                (Activation::Relu, true) => lts::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_BIAS,
                (Activation::GeluTanh, false) => lts::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU,
                (Activation::GeluTanh, true) => {
                    lts::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS
                }
            };
            desc_attr(
                desc,
                lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE,
                &ep,
            )
            .map_err(e)?;
            if let Some((arg, off)) = bias {
                let bp = ptrs[*arg] + *off as u64 * elem(p.d_dtype);
                desc_attr(
                    desc,
                    lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                    &bp,
                )
                .map_err(e)?;
            }
        }
        let pref = lt::create_matmul_pref().map_err(e)?;
        let ws = WORKSPACE as u64;
        let aligns = [
            alignment(ptrs[p.x.arg] + p.x.offset as u64 * elem(p.dtype)),
            alignment(ptrs[p.y.arg] + p.y.offset as u64 * elem(p.dtype)),
            256,
            256,
        ];
        // SAFETY: attribute values are live locals of the documented types.
        let prefs = unsafe {
            use lts::cublasLtMatmulPreferenceAttributes_t as A;
            let set = |a, v: &u32| {
                lt::set_matmul_pref_attribute(pref, a, v as *const u32 as *const c_void, 4)
            };
            lt::set_matmul_pref_attribute(
                pref,
                A::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &ws as *const u64 as *const c_void,
                8,
            )
            .and_then(|_| set(A::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aligns[0]))
            .and_then(|_| set(A::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &aligns[1]))
            .and_then(|_| set(A::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &aligns[2]))
            .and_then(|_| set(A::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &aligns[3]))
        };
        // SAFETY: every descriptor is live; the preference is destroyed once below.
        let heuristic = prefs.and_then(|_| unsafe {
            lt::get_matmul_algo_heuristic(
                self.handle,
                desc,
                x_layout,
                y_layout,
                gemm.d_layout,
                gemm.d_layout,
                pref,
            )
        });
        // SAFETY: created above, destroyed once.
        unsafe {
            let _ = lt::destroy_matmul_pref(pref);
        }
        match heuristic {
            Ok(h) => gemm.algo = h.algo,
            // No algorithm for this case: the generated kernel runs it.
            Err(lt::CublasError(lts::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED)) => {
                return Ok(None)
            }
            Err(err) => return Err(e(err)),
        }
        if let Epilogue::Kernel(k) = &gemm.plan.epilogue {
            gemm.epilogue = Some(Arc::new((**k).clone()));
        }
        Ok(Some(Arc::new(gemm)))
    }

    /// Runs the product into `d` (the output, or scratch for a generated
    /// epilogue) on `stream`.
    pub(crate) fn run(&self, g: &Gemm, ptrs: &[u64], d: u64, stream: drv::CUstream) -> Result<()> {
        let p = &g.plan;
        let elem = p.dtype.size_in_bytes() as u64;
        let x = ptrs[p.x.arg] + p.x.offset as u64 * elem;
        let y = ptrs[p.y.arg] + p.y.offset as u64 * elem;
        let what = || format!("{}x{}x{} batch {} {}", p.m, p.n, p.k, p.batch, p.dtype);
        if let Epilogue::Fused {
            bias: Some((arg, off)),
            ..
        } = &p.epilogue
        {
            let bp = ptrs[*arg] + *off as u64 * p.d_dtype.size_in_bytes() as u64;
            desc_attr(
                g.desc,
                lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                &bp,
            )
            .map_err(|e| error::cublas("cublaslt", &what(), e))?;
        }
        let (a32, b32) = (1.0f32, 0.0f32);
        let (a64, b64) = (1.0f64, 0.0f64);
        let (alpha, beta): (*const c_void, *const c_void) = if p.dtype == DType::F64 {
            (
                &a64 as *const f64 as *const c_void,
                &b64 as *const f64 as *const c_void,
            )
        } else {
            (
                &a32 as *const f32 as *const c_void,
                &b32 as *const f32 as *const c_void,
            )
        };
        // SAFETY: the layouts describe memory inside the argument buffers
        // (the plan came from the kernel's in-bounds layouts); `d` holds
        // batch * m * n elements of `d_dtype`; the workspace is WORKSPACE bytes.
        unsafe {
            lt::matmul(
                self.handle,
                g.desc,
                alpha,
                beta,
                x as *const c_void,
                g.x_layout,
                y as *const c_void,
                g.y_layout,
                d as *const c_void,
                g.d_layout,
                d as *mut c_void,
                g.d_layout,
                &g.algo,
                self.workspace.ptr() as *mut c_void,
                WORKSPACE,
                stream as lts::cudaStream_t,
            )
        }
        .map_err(|e| error::cublas("cublaslt", &format!("{} on {}", what(), self.device), e))
    }

    /// Bytes of scratch the call needs before its generated epilogue (0 when fused).
    pub(crate) fn scratch_bytes(g: &Gemm) -> usize {
        match g.plan.epilogue {
            Epilogue::Fused { .. } => 0,
            Epilogue::Kernel(_) => {
                (g.plan.batch * g.plan.m * g.plan.n) as usize * g.plan.d_dtype.size_in_bytes()
            }
        }
    }
}

/// The bytes cuBLASLt's workspace needs.
pub(crate) const WORKSPACE_BYTES: usize = WORKSPACE;
