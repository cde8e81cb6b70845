//! Shared helpers of the fusegraph conformance suite: the tolerance table,
//! comparison of a backend's result with the f64 reference path, random
//! tensor builders and kernel counting.
//!
//! Every backend is checked against `reference::evaluate`, which evaluates
//! the unfused graph op by op in f64 and rounds each op's result to its dtype.

use fusegraph_core::backend::cpu::reference;
use fusegraph_core::runtime::{compiled_for, limits_for, Compiled};
use fusegraph_core::{DType, Device, Result, Tensor};
use std::sync::Arc;

mod auto;
pub mod gradcheck;

pub use auto::{auto_device, AUTO_TEST_MIN_GPU_FLOPS};

#[cfg(feature = "wgpu")]
mod wgpu;
#[cfg(feature = "wgpu")]
pub use wgpu::wgpu_device;

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
pub use cuda::cuda_device;

/// The tolerance table, in one place.
///
/// An element `got` passes against the reference `want` when
/// `|got - want| <= tol * max(1, |want|)` (relative above 1, absolute below),
/// where `tol = base(dtype) * ops * growth(n)`:
///
/// * `base` is a few units in the last place of the dtype, because the fast
///   path may evaluate a fused op in a different (but correctly rounded)
///   order than the reference:
///   - f64: 1e-12 (≈ 4500 ulp of 2.2e-16; libm-level differences in
///     exp/tanh/erf plus reassociation).
///   - f32: 1e-5 (≈ 80 ulp of 1.19e-7; the fast path computes fused f32
///     chains in f32, exp, erf, tanh and log with its own vectorised
///     polynomials (within 2 ulp, checked in `core`'s `fastmath` tests) and the other
///     transcendental functions with `std`'s, the reference in f64 rounded
///     once per op).
///   - f16: 2e-3 (≈ 2 ulp of 9.8e-4): the fast path keeps f16 intermediates
///     of a fused kernel in f32 while the reference rounds each op to f16, so
///     every op may differ by one half-ulp rounding.
///   - bf16: 1.6e-2 (≈ 2 ulp of 7.8e-3), same reasoning.
///   - integers and bool: 0 (exact).
/// * `ops` is the number of rounding ops in the expression (each can add one
///   rounding difference for the half types; for f32/f64 it bounds the
///   amplification of a chain).
/// * `growth(n) = max(1, sqrt(n) / 4)` for a reduction over `n` elements:
///   summation in a different order has an error that grows like `sqrt(n)`
///   for random inputs (the fast path sums 8 lanes in the compute type and
///   chunks in f64, the reference sums in f64).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tol {
    pub dtype: DType,
    pub tol: f64,
}

impl Tol {
    /// The base tolerance of `dtype` for a single op.
    pub fn of(dtype: DType) -> Tol {
        let tol = match dtype {
            DType::F64 => 1e-12,
            DType::F32 => 1e-5,
            DType::F16 => 2e-3,
            DType::BF16 => 1.6e-2,
            DType::I32 | DType::U8 | DType::Bool => 0.0,
        };
        Tol { dtype, tol }
    }

    /// For an expression of `ops` rounding ops.
    pub fn ops(self, ops: usize) -> Tol {
        Tol {
            tol: self.tol * ops.max(1) as f64,
            ..self
        }
    }

    /// For a reduction over `n` elements.
    pub fn reduce(self, n: usize) -> Tol {
        Tol {
            tol: self.tol * ((n as f64).sqrt() / 4.0).max(1.0),
            ..self
        }
    }

    /// True when `got` is within tolerance of `want` (NaN matches NaN,
    /// infinities must match exactly).
    pub fn accepts(&self, got: f64, want: f64) -> bool {
        if want.is_nan() || got.is_nan() {
            return want.is_nan() && got.is_nan();
        }
        if want.is_infinite() || got.is_infinite() {
            return got == want;
        }
        (got - want).abs() <= self.tol * want.abs().max(1.0)
    }
}

/// Compares two value lists element by element; the error names the first
/// bad position.
pub fn compare(what: &str, got: &[f64], want: &[f64], tol: Tol) -> std::result::Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: got {} values, reference has {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if !tol.accepts(g, w) {
            return Err(format!(
                "{what}: element {i}: got {g}, reference {w} (tol {:e} for {})",
                tol.tol, tol.dtype
            ));
        }
    }
    Ok(())
}

/// Realizes `t` on its backend and checks it against the f64 reference,
/// with the tolerance of the tensor's dtype scaled by `ops`.
pub fn check_ops(what: &str, t: &Tensor, ops: usize) -> Result<()> {
    check_tol(what, t, Tol::of(t.dtype()).ops(ops))
}

/// [`check_ops`] for a single op.
pub fn check(what: &str, t: &Tensor) -> Result<()> {
    check_ops(what, t, 1)
}

/// Realizes `t` and compares with the reference under `tol`; panics with a
/// message naming the case on mismatch. Returns the backend's values.
pub fn check_tol(what: &str, t: &Tensor, tol: Tol) -> Result<()> {
    let want = reference::evaluate(t)?;
    assert_eq!(
        want.shape(),
        t.shape(),
        "{what}: reference shape differs from the tensor's"
    );
    let got = t.to_vec_f64()?;
    let want: Vec<f64> = want.iter().copied().collect();
    if let Err(m) = compare(what, &got, &want, tol) {
        panic!("{m}");
    }
    Ok(())
}

/// Like [`check_tol`] but returns the mismatch instead of panicking (for
/// property tests).
pub fn try_check(what: &str, t: &Tensor, tol: Tol) -> std::result::Result<(), String> {
    let want = reference::evaluate(t).map_err(|e| format!("{what}: reference failed: {e}"))?;
    let got = t
        .to_vec_f64()
        .map_err(|e| format!("{what}: backend failed: {e}"))?;
    if want.shape() != t.shape() {
        return Err(format!(
            "{what}: reference shape {:?} vs tensor shape {:?}",
            want.shape(),
            t.shape()
        ));
    }
    let want: Vec<f64> = want.iter().copied().collect();
    compare(what, &got, &want, tol)
}

/// A realized tensor of `dtype` holding `values` (rounded as a cast would).
/// The values are cast on the host (a GPU may not hold the f64 they start
/// as) and then moved to `dev`.
pub fn leaf(values: &[f64], shape: &[usize], dtype: DType, dev: &Device) -> Result<Tensor> {
    let t = Tensor::from_vec(values.to_vec(), shape.to_vec(), &Device::Cpu)?.cast(dtype)?;
    t.realize()?;
    let t = t.to_device(dev)?;
    t.realize()?;
    Ok(t)
}

/// A realized standard-normal tensor (a leaf, so kernel counts of the
/// expressions built on it do not include the generator).
pub fn randn(shape: &[usize], seed: u64, dtype: DType, dev: &Device) -> Result<Tensor> {
    let t = Tensor::randn(shape.to_vec(), seed, dtype, dev)?;
    t.realize()?;
    Ok(t)
}

/// A realized uniform tensor in `[lo, hi)`.
pub fn uniform(
    shape: &[usize],
    seed: u64,
    lo: f64,
    hi: f64,
    dtype: DType,
    dev: &Device,
) -> Result<Tensor> {
    // Drawn in f64 on the host (a GPU may lack f64), then moved to `dev`.
    let t = Tensor::rand(shape.to_vec(), seed, DType::F64, &Device::Cpu)?
        .mul_scalar(hi - lo)?
        .add_scalar(lo)?
        .cast(dtype)?;
    t.realize()?;
    let t = t.to_device(dev)?;
    t.realize()?;
    Ok(t)
}

/// A realized i32 tensor of integers in `lo..hi`.
pub fn randint(shape: &[usize], seed: u64, lo: i32, hi: i32, dev: &Device) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let span = (hi - lo).max(1) as u64;
    let v: Vec<i32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (s % span) as i32
        })
        .collect();
    Tensor::from_vec(v, shape.to_vec(), dev)
}

/// The compiled form of the graph computing `t` with its device's limits.
pub fn compiled(t: &Tensor) -> Result<Arc<Compiled>> {
    compiled_for(std::slice::from_ref(t), &limits_for(*t.device())?)
}

/// Kernels launched to compute `t` (inputs should be realized leaves).
pub fn kernels(t: &Tensor) -> Result<usize> {
    Ok(compiled(t)?.schedule.steps.len())
}

/// Kernels launched to compute `t` with fusion off.
pub fn kernels_unfused(t: &Tensor) -> Result<usize> {
    Ok(
        compiled_for(std::slice::from_ref(t), &limits_for(*t.device())?.unfused())?
            .schedule
            .steps
            .len(),
    )
}

/// True when `dev` computes `dtype` (the CPU computes every dtype; wgpu has
/// no f64, and f16 only with the adapter's `shader-f16`).
pub fn supports(dev: &Device, dtype: DType) -> bool {
    match (dev, dtype) {
        #[cfg(feature = "wgpu")]
        (Device::Wgpu, DType::F64) => false,
        #[cfg(feature = "wgpu")]
        (Device::Wgpu, DType::F16) => {
            fusegraph_core::backend::wgpu::current().is_some_and(|b| b.render_options().shader_f16)
        }
        _ => true,
    }
}

/// The dtypes of `dtypes` that `dev` computes. Each one it does not is
/// checked to fail with a clear `UnsupportedDType` naming it (so an
/// unsupported dtype is a tested error path, never a silent skip).
pub fn supported(dev: &Device, dtypes: &[DType]) -> Vec<DType> {
    dtypes
        .iter()
        .copied()
        .filter(|&d| {
            if supports(dev, d) {
                return true;
            }
            assert_unsupported(dev, d);
            false
        })
        .collect()
}

/// Asserts that computing `dtype` on `dev` fails with `UnsupportedDType`.
pub fn assert_unsupported(dev: &Device, dtype: DType) {
    let r = Tensor::ones([3], dtype, dev).and_then(|t| t.add_scalar(1.0)?.to_vec_f64());
    match r {
        Err(fusegraph_core::Error::UnsupportedDType { dtype: got, .. }) => {
            assert_eq!(got, dtype, "the error names the dtype")
        }
        other => panic!("{dtype} on {dev}: expected UnsupportedDType, got {other:?}"),
    }
}

/// The widest float `dev` computes: f64, or f32 on a GPU without f64.
pub fn wide(dev: &Device) -> DType {
    if supports(dev, DType::F64) {
        DType::F64
    } else {
        DType::F32
    }
}

/// The float dtypes every float op is checked on.
pub const FLOATS: [DType; 4] = [DType::F64, DType::F32, DType::F16, DType::BF16];

/// The backend a conformance module runs on, or `None` (after printing
/// `skipped: <backend> not available`) when it cannot run here.
pub fn available(backend: &str, device: Option<Device>) -> Option<Device> {
    if device.is_none() {
        eprintln!("skipped: {backend} not available");
    }
    device
}

/// Realizes `t` on `dev` inside a profiling scope and checks what a GPU
/// backend's profiler records: the kernels this thread ran (scopes see
/// every thread's), each with a positive duration, all of them together
/// inside the wall time of the realize and the wait. Returns their kinds.
pub fn check_profiled_kernels(dev: Device, t: &Tensor) -> Result<Vec<&'static str>> {
    let scope = fusegraph_core::profile::Scope::start();
    let start = std::time::Instant::now();
    t.realize()?;
    fusegraph_core::synchronize(dev)?;
    let wall = start.elapsed().as_nanos() as u64;
    let me = fusegraph_core::profile::thread_id();
    let mine: Vec<_> = scope
        .finish()
        .records
        .into_iter()
        .filter(|r| r.thread == me)
        .collect();
    let kinds: Vec<&'static str> = mine.iter().map(|r| r.kind).collect();
    assert!(mine.iter().all(|r| r.dur_ns > 0), "{mine:?}");
    let total: u64 = mine.iter().map(|r| r.dur_ns).sum();
    eprintln!("kernels {total} ns of {wall} ns wall: {kinds:?}");
    assert!(
        total <= wall,
        "kernel times {total} ns exceed the wall time {wall} ns"
    );
    Ok(kinds)
}
