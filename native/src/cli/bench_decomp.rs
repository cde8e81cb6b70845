//! The decomposition cases of the CPU suite: SVD, QR and Cholesky of a
//! 512×512 f32 matrix (the seed tables' sizes). Decompositions run eagerly,
//! so the timed call is the factorization itself; the check reconstructs the
//! input from the factors in f64 and reports the largest error relative to
//! max |A|.

use fusegraph_core::{DType, Device, Result, Tensor};

use super::measure::{noise, Check};

/// f32 reconstruction error allowed, relative to max |A|. The measured
/// errors are near 1e-6 at 512 (backward-stable algorithms: c·n·ε·‖A‖).
const DECOMP_TOL: f64 = 1e-4;

/// A 512×512 matrix of `noise` values.
pub fn decomp_input(n: usize, seed: u64) -> Result<Tensor> {
    Tensor::from_vec(noise(n * n, seed), [n, n], &Device::Cpu)
}

/// The SPD matrix the Cholesky case factors: X·Xᵀ/n + I computed in f64
/// and rounded to f32 (NumPy does the same).
pub fn spd_input(n: usize, seed: u64) -> Result<Tensor> {
    let x = decomp_input(n, seed)?.cast(DType::F64)?;
    let eye: Vec<f64> = (0..n * n)
        .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
        .collect();
    let eye = Tensor::from_vec(eye, [n, n], &Device::Cpu)?;
    let a = x
        .matmul(&x.t()?)?
        .mul_scalar(1.0 / n as f64)?
        .add(&eye)?
        .cast(DType::F32)?;
    a.realize()?;
    Ok(a)
}

/// `max |recon - a| / max |a|` computed in f64, as a [`Check`].
fn reconstruction_check(recon: &Tensor, a: &Tensor) -> Result<Check> {
    let (r, a) = (recon.to_vec_f64()?, a.to_vec_f64()?);
    let max_abs = r
        .iter()
        .zip(&a)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    let max_ref = a.iter().map(|x| x.abs()).fold(0.0, f64::max);
    let rel = max_abs / max_ref.max(f64::MIN_POSITIVE);
    Ok(Check {
        compared: a.len(),
        max_abs_err: max_abs,
        max_err_rel_to_max: rel,
        tolerance: DECOMP_TOL,
        ok: r.len() == a.len() && rel.is_finite() && rel <= DECOMP_TOL,
    })
}

fn wide(t: &Tensor) -> Result<Tensor> {
    t.cast(DType::F64)
}

/// U·diag(S)·Vᵀ against A.
pub fn check_svd(a: &Tensor) -> Result<Check> {
    check_factors_svd(a, &a.svd()?)
}

/// U·diag(S)·Vᵀ of given factors against A.
pub fn check_factors_svd(a: &Tensor, (u, s, vt): &(Tensor, Tensor, Tensor)) -> Result<Check> {
    let recon = wide(u)?.mul(&wide(s)?)?.matmul(&wide(vt)?)?;
    reconstruction_check(&recon, a)
}

/// Q·R against A.
pub fn check_qr(a: &Tensor) -> Result<Check> {
    let (q, r) = a.qr()?;
    reconstruction_check(&wide(&q)?.matmul(&wide(&r)?)?, a)
}

/// L·Lᵀ against A.
pub fn check_cholesky(a: &Tensor) -> Result<Check> {
    let l = wide(&a.cholesky()?)?;
    reconstruction_check(&l.matmul(&l.t()?)?, a)
}
