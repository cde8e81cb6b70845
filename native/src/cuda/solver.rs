//! SVD, QR and Cholesky through cuSOLVER's dense API, on the backend's one
//! stream. Matrices arrive column-major (the core transposes on the device
//! before calling), one matrix of a batch at a time: potrf for Cholesky,
//! geqrf + orgqr for QR, gesvdj (Jacobi, economy size, any m×n) for SVD.
//! The handle and the Jacobi parameters are made on first use; the
//! per-matrix `info` codes are read back after the batch to report a
//! matrix that is not positive definite or an SVD that did not converge.

use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard};

use cudarc::cusolver::sys as cs;
use cudarc::driver::{result, sys as drv};
use fusegraph_core::backend::cpu::decomp::Decomposition;
use fusegraph_core::backend::cpu::CpuStorage;
use fusegraph_core::backend::Storage;
use fusegraph_core::{DType, Error, Result};

use super::alloc::CudaBuffer;
use super::backend::{nbytes, CudaBackend};
use super::error;

/// Jacobi sweeps gesvdj may run before it reports no convergence
/// (cuSOLVER's default).
const SVD_MAX_SWEEPS: c_int = 100;

/// The cuSOLVER handle of one device (bound to its stream).
pub(crate) struct Solver {
    handle: cs::cusolverDnHandle_t,
    jacobi: cs::gesvdjInfo_t,
}

// SAFETY: the handle is only used under the backend's execution lock.
unsafe impl Send for Solver {}

impl Drop for Solver {
    fn drop(&mut self) {
        // SAFETY: both were created by `Solver::new` and are not used after this.
        unsafe {
            cs::cusolverDnDestroyGesvdjInfo(self.jacobi);
            cs::cusolverDnDestroy(self.handle);
        }
    }
}

fn status(op: &'static str, what: &str, s: cs::cusolverStatus_t) -> Result<()> {
    s.result().map_err(|e| Error::Backend {
        op,
        message: format!("cuSOLVER {e:?} in {what}"),
    })
}

impl Solver {
    fn new(stream: drv::CUstream) -> Result<Solver> {
        let op = "cuda decompose";
        let mut handle = std::ptr::null_mut();
        let mut jacobi = std::ptr::null_mut();
        // SAFETY: out-pointers to live locals; the stream outlives the handle
        // (both belong to the backend).
        unsafe {
            status(op, "cusolverDnCreate", cs::cusolverDnCreate(&mut handle))?;
            status(
                op,
                "cusolverDnSetStream",
                cs::cusolverDnSetStream(handle, stream as cs::cudaStream_t),
            )?;
            status(
                op,
                "cusolverDnCreateGesvdjInfo",
                cs::cusolverDnCreateGesvdjInfo(&mut jacobi),
            )?;
        }
        Ok(Solver { handle, jacobi })
    }
}

/// The lazily made solver of a backend.
pub(crate) struct SolverSlot(Mutex<Option<Solver>>);

impl SolverSlot {
    pub(crate) fn new() -> SolverSlot {
        SolverSlot(Mutex::new(None))
    }

    fn get(&self, stream: drv::CUstream) -> Result<MutexGuard<'_, Option<Solver>>> {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(Solver::new(stream)?);
        }
        Ok(g)
    }
}

/// The f32/f64 entry points of cuSOLVER, so one driver serves both (the
/// signatures mirror the C API's, hence their length).
#[allow(clippy::too_many_arguments)]
trait Lapack: Copy {
    const DTYPE: DType;
    unsafe fn potrf_ws(
        h: cs::cusolverDnHandle_t,
        n: c_int,
        a: *mut Self,
        lwork: *mut c_int,
    ) -> cs::cusolverStatus_t;
    unsafe fn potrf(
        h: cs::cusolverDnHandle_t,
        n: c_int,
        a: *mut Self,
        w: *mut Self,
        lwork: c_int,
        info: *mut c_int,
    ) -> cs::cusolverStatus_t;
    unsafe fn geqrf_ws(
        h: cs::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lwork: *mut c_int,
    ) -> cs::cusolverStatus_t;
    unsafe fn geqrf(
        h: cs::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        tau: *mut Self,
        w: *mut Self,
        lwork: c_int,
        info: *mut c_int,
    ) -> cs::cusolverStatus_t;
    unsafe fn orgqr_ws(
        h: cs::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: *mut Self,
        tau: *mut Self,
        lwork: *mut c_int,
    ) -> cs::cusolverStatus_t;
    unsafe fn orgqr(
        h: cs::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: *mut Self,
        tau: *mut Self,
        w: *mut Self,
        lwork: c_int,
        info: *mut c_int,
    ) -> cs::cusolverStatus_t;
    unsafe fn gesvdj_ws(
        h: cs::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        s: *mut Self,
        u: *mut Self,
        v: *mut Self,
        lwork: *mut c_int,
        p: cs::gesvdjInfo_t,
    ) -> cs::cusolverStatus_t;
    unsafe fn gesvdj(
        h: cs::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        s: *mut Self,
        u: *mut Self,
        v: *mut Self,
        w: *mut Self,
        lwork: c_int,
        info: *mut c_int,
        p: cs::gesvdjInfo_t,
    ) -> cs::cusolverStatus_t;
}

const LOWER: cs::cublasFillMode_t = cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
const VECTORS: cs::cusolverEigMode_t = cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR;

macro_rules! lapack {
    ($t:ty, $d:expr, $potrf:ident, $potrf_ws:ident, $geqrf:ident, $geqrf_ws:ident, $orgqr:ident, $orgqr_ws:ident, $gesvdj:ident, $gesvdj_ws:ident) => {
        #[allow(clippy::too_many_arguments)]
        impl Lapack for $t {
            const DTYPE: DType = $d;
            unsafe fn potrf_ws(
                h: cs::cusolverDnHandle_t,
                n: c_int,
                a: *mut Self,
                lwork: *mut c_int,
            ) -> cs::cusolverStatus_t {
                cs::$potrf_ws(h, LOWER, n, a, n, lwork)
            }
            unsafe fn potrf(
                h: cs::cusolverDnHandle_t,
                n: c_int,
                a: *mut Self,
                w: *mut Self,
                lwork: c_int,
                info: *mut c_int,
            ) -> cs::cusolverStatus_t {
                cs::$potrf(h, LOWER, n, a, n, w, lwork, info)
            }
            unsafe fn geqrf_ws(
                h: cs::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                lwork: *mut c_int,
            ) -> cs::cusolverStatus_t {
                cs::$geqrf_ws(h, m, n, a, m, lwork)
            }
            unsafe fn geqrf(
                h: cs::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                tau: *mut Self,
                w: *mut Self,
                lwork: c_int,
                info: *mut c_int,
            ) -> cs::cusolverStatus_t {
                cs::$geqrf(h, m, n, a, m, tau, w, lwork, info)
            }
            unsafe fn orgqr_ws(
                h: cs::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                k: c_int,
                a: *mut Self,
                tau: *mut Self,
                lwork: *mut c_int,
            ) -> cs::cusolverStatus_t {
                cs::$orgqr_ws(h, m, n, k, a, m, tau, lwork)
            }
            unsafe fn orgqr(
                h: cs::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                k: c_int,
                a: *mut Self,
                tau: *mut Self,
                w: *mut Self,
                lwork: c_int,
                info: *mut c_int,
            ) -> cs::cusolverStatus_t {
                cs::$orgqr(h, m, n, k, a, m, tau, w, lwork, info)
            }
            unsafe fn gesvdj_ws(
                h: cs::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                s: *mut Self,
                u: *mut Self,
                v: *mut Self,
                lwork: *mut c_int,
                p: cs::gesvdjInfo_t,
            ) -> cs::cusolverStatus_t {
                cs::$gesvdj_ws(h, VECTORS, 1, m, n, a, m, s, u, m, v, n, lwork, p)
            }
            unsafe fn gesvdj(
                h: cs::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                s: *mut Self,
                u: *mut Self,
                v: *mut Self,
                w: *mut Self,
                lwork: c_int,
                info: *mut c_int,
                p: cs::gesvdjInfo_t,
            ) -> cs::cusolverStatus_t {
                cs::$gesvdj(h, VECTORS, 1, m, n, a, m, s, u, m, v, n, w, lwork, info, p)
            }
        }
    };
}

lapack!(
    f32,
    DType::F32,
    cusolverDnSpotrf,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSgeqrf,
    cusolverDnSgeqrf_bufferSize,
    cusolverDnSorgqr,
    cusolverDnSorgqr_bufferSize,
    cusolverDnSgesvdj,
    cusolverDnSgesvdj_bufferSize
);
lapack!(
    f64,
    DType::F64,
    cusolverDnDpotrf,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDgeqrf,
    cusolverDnDgeqrf_bufferSize,
    cusolverDnDorgqr,
    cusolverDnDorgqr_bufferSize,
    cusolverDnDgesvdj,
    cusolverDnDgesvdj_bufferSize
);

/// Runs `kind` over the batch in `input` (column-major m×n matrices).
pub(crate) fn decompose(
    be: &CudaBackend,
    kind: Decomposition,
    input: &Storage,
    batch: usize,
    m: usize,
    n: usize,
) -> Result<Vec<Storage>> {
    let op = "cuda decompose";
    if m > c_int::MAX as usize || n > c_int::MAX as usize {
        return Err(Error::TooLarge {
            op: kind.name(),
            shape: vec![batch, m, n],
        });
    }
    let src = be.ptr_of(input)?;
    let slot = be.solver.as_ref().ok_or_else(|| Error::Backend {
        op,
        message: "cuSOLVER is not loaded".into(),
    })?;
    let guard = slot.get(be.cu_stream())?;
    let solver = guard.as_ref().ok_or_else(|| Error::Backend {
        op,
        message: "the cuSOLVER handle was not made".into(),
    })?;
    match input.dtype() {
        DType::F32 => run::<f32>(be, solver, kind, src, batch, m, n),
        DType::F64 => run::<f64>(be, solver, kind, src, batch, m, n),
        dtype => Err(Error::UnsupportedDType {
            op: kind.name(),
            dtype,
            why: "cuSOLVER factorizes f32 or f64",
        }),
    }
}

struct Out {
    buf: CudaBuffer,
    len: usize,
}

fn alloc<T: Lapack>(be: &CudaBackend, len: usize) -> Result<Out> {
    Ok(Out {
        buf: be.alloc(nbytes(T::DTYPE, len.max(1)))?,
        len,
    })
}

fn p<T>(base: u64, elem: usize) -> *mut T {
    (base as usize + elem * std::mem::size_of::<T>()) as *mut T
}

fn copy_d2d(be: &CudaBackend, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: both ranges lie inside live buffers of this device.
    unsafe { result::memcpy_dtod_async(dst, src, bytes, be.cu_stream()) }
        .map_err(|e| error::driver("cuda decompose", &be.name, e))
}

/// Copies the leading `rows` of each of `cols` columns (pitch `ld` elements)
/// into a dense rows×cols column-major matrix at `dst`.
fn copy_rows<T>(
    be: &CudaBackend,
    dst: u64,
    src: u64,
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<()> {
    let e = std::mem::size_of::<T>();
    let copy = drv::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: drv::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        srcPitch: ld * e,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: drv::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstPitch: rows * e,
        WidthInBytes: rows * e,
        Height: cols,
    };
    // SAFETY: the source holds `cols` columns of pitch `ld`, the destination rows*cols elements.
    unsafe { drv::cuMemcpy2DAsync_v2(&copy, be.cu_stream()) }
        .result()
        .map_err(|e| error::driver("cuda decompose", &be.name, e))
}

fn run<T: Lapack>(
    be: &CudaBackend,
    solver: &Solver,
    kind: Decomposition,
    src: u64,
    batch: usize,
    m: usize,
    n: usize,
) -> Result<Vec<Storage>> {
    let op = kind.name();
    let h = solver.handle;
    let k = m.min(n);
    let (mi, ni, ki) = (m as c_int, n as c_int, k as c_int);
    let esz = std::mem::size_of::<T>();
    let info = alloc::<T>(be, batch.max(1))?; // one c_int per matrix (T is at least as wide)
    let infos = |b: usize| p::<c_int>(info.buf.ptr(), b);
    let mut lwork: c_int = 0;
    let outs = match kind {
        Decomposition::Cholesky => {
            let l = alloc::<T>(be, batch * n * n)?;
            copy_d2d(be, l.buf.ptr(), src, batch * n * n * esz)?;
            // SAFETY (this block and the ones below): every pointer is inside
            // a buffer allocated above for the sizes cuSOLVER is told.
            unsafe {
                status(
                    op,
                    "potrf_bufferSize",
                    T::potrf_ws(h, ni, p(l.buf.ptr(), 0), &mut lwork),
                )?;
                let w = alloc::<T>(be, lwork as usize)?;
                for b in 0..batch {
                    status(
                        op,
                        "potrf",
                        T::potrf(
                            h,
                            ni,
                            p(l.buf.ptr(), b * n * n),
                            p(w.buf.ptr(), 0),
                            lwork,
                            infos(b),
                        ),
                    )?;
                }
                check_info(be, &info, batch, |b, code| {
                    if code > 0 {
                        Error::NotPositiveDefinite {
                            op,
                            shape: vec![m, n],
                            batch_index: b,
                        }
                    } else {
                        bad_parameter(op, "potrf", code)
                    }
                })?;
            }
            vec![l]
        }
        Decomposition::Qr => {
            let work = alloc::<T>(be, m * n)?;
            let q = alloc::<T>(be, batch * m * k)?;
            let r = alloc::<T>(be, batch * k * n)?;
            let tau = alloc::<T>(be, k)?;
            unsafe {
                status(
                    op,
                    "geqrf_bufferSize",
                    T::geqrf_ws(h, mi, ni, p(work.buf.ptr(), 0), &mut lwork),
                )?;
                let mut lwork_q: c_int = 0;
                status(
                    op,
                    "orgqr_bufferSize",
                    T::orgqr_ws(
                        h,
                        mi,
                        ki,
                        ki,
                        p(work.buf.ptr(), 0),
                        p(tau.buf.ptr(), 0),
                        &mut lwork_q,
                    ),
                )?;
                let lwork = lwork.max(lwork_q);
                let w = alloc::<T>(be, lwork as usize)?;
                for b in 0..batch {
                    copy_d2d(
                        be,
                        work.buf.ptr(),
                        src + (b * m * n * esz) as u64,
                        m * n * esz,
                    )?;
                    status(
                        op,
                        "geqrf",
                        T::geqrf(
                            h,
                            mi,
                            ni,
                            p(work.buf.ptr(), 0),
                            p(tau.buf.ptr(), 0),
                            p(w.buf.ptr(), 0),
                            lwork,
                            infos(b),
                        ),
                    )?;
                    // R: the first k rows of every column.
                    copy_rows::<T>(
                        be,
                        r.buf.ptr() + (b * k * n * esz) as u64,
                        work.buf.ptr(),
                        k,
                        n,
                        m,
                    )?;
                    status(
                        op,
                        "orgqr",
                        T::orgqr(
                            h,
                            mi,
                            ki,
                            ki,
                            p(work.buf.ptr(), 0),
                            p(tau.buf.ptr(), 0),
                            p(w.buf.ptr(), 0),
                            lwork,
                            infos(b),
                        ),
                    )?;
                    // Q: the first k columns, contiguous with pitch m.
                    copy_d2d(
                        be,
                        q.buf.ptr() + (b * m * k * esz) as u64,
                        work.buf.ptr(),
                        m * k * esz,
                    )?;
                }
                check_info(be, &info, batch, |_, code| {
                    bad_parameter(op, "geqrf/orgqr", code)
                })?;
            }
            vec![q, r]
        }
        Decomposition::Svd => {
            let work = alloc::<T>(be, m * n)?;
            let u = alloc::<T>(be, batch * m * k)?;
            let s = alloc::<T>(be, batch * k)?;
            let v = alloc::<T>(be, batch * n * k)?;
            // Converge to the dtype's unit roundoff (set explicitly, so the
            // stopping rule does not depend on the cuSOLVER version).
            let eps = if T::DTYPE == DType::F32 {
                f64::from(f32::EPSILON)
            } else {
                f64::EPSILON
            };
            unsafe {
                status(
                    op,
                    "gesvdjSetTolerance",
                    cs::cusolverDnXgesvdjSetTolerance(solver.jacobi, eps),
                )?;
                status(
                    op,
                    "gesvdjSetMaxSweeps",
                    cs::cusolverDnXgesvdjSetMaxSweeps(solver.jacobi, SVD_MAX_SWEEPS),
                )?;
                status(
                    op,
                    "gesvdj_bufferSize",
                    T::gesvdj_ws(
                        h,
                        mi,
                        ni,
                        p(work.buf.ptr(), 0),
                        p(s.buf.ptr(), 0),
                        p(u.buf.ptr(), 0),
                        p(v.buf.ptr(), 0),
                        &mut lwork,
                        solver.jacobi,
                    ),
                )?;
                let w = alloc::<T>(be, lwork as usize)?;
                for b in 0..batch {
                    // gesvdj overwrites its input.
                    copy_d2d(
                        be,
                        work.buf.ptr(),
                        src + (b * m * n * esz) as u64,
                        m * n * esz,
                    )?;
                    status(
                        op,
                        "gesvdj",
                        T::gesvdj(
                            h,
                            mi,
                            ni,
                            p(work.buf.ptr(), 0),
                            p(s.buf.ptr(), b * k),
                            p(u.buf.ptr(), b * m * k),
                            p(v.buf.ptr(), b * n * k),
                            p(w.buf.ptr(), 0),
                            lwork,
                            infos(b),
                            solver.jacobi,
                        ),
                    )?;
                }
                check_info(be, &info, batch, |_, code| {
                    if code > 0 {
                        Error::NoConvergence {
                            op,
                            shape: vec![m, n],
                            why: format!("gesvdj info {code}"),
                        }
                    } else {
                        bad_parameter(op, "gesvdj", code)
                    }
                })?;
                if fusegraph_core::graph::print::debug_enabled("solver") {
                    let (mut sweeps, mut residual) = (0, 0.0);
                    let _ = cs::cusolverDnXgesvdjGetSweeps(h, solver.jacobi, &mut sweeps);
                    let _ = cs::cusolverDnXgesvdjGetResidual(h, solver.jacobi, &mut residual);
                    eprintln!("gesvdj {m}x{n} (last of the batch): {sweeps} sweeps, residual {residual:.3e} (tolerance {eps:.1e})");
                }
            }
            vec![u, s, v]
        }
    };
    Ok(outs
        .into_iter()
        .map(|o| Storage::Device {
            device: fusegraph_core::backend::Backend::device(be),
            dtype: T::DTYPE,
            len: o.len,
            buffer: Box::new(o.buf),
        })
        .collect())
}

fn bad_parameter(op: &'static str, call: &str, code: c_int) -> Error {
    Error::Backend {
        op,
        message: format!("cuSOLVER {call} rejected parameter {}", -code),
    }
}

/// Reads the per-matrix info codes (this waits for the stream) and turns
/// the first nonzero one into an error.
fn check_info(
    be: &CudaBackend,
    info: &Out,
    batch: usize,
    err: impl Fn(usize, c_int) -> Error,
) -> Result<()> {
    let mut host = CpuStorage::zeros(DType::I32, batch);
    be.read_into(info.buf.ptr(), &mut host)?;
    if let CpuStorage::I32(codes) = &host {
        if let Some((b, &code)) = codes.iter().enumerate().find(|(_, &c)| c != 0) {
            return Err(err(b, code));
        }
    }
    Ok(())
}
