//! Matrix decompositions on the host through `faer`: Cholesky, thin QR and
//! thin SVD of row-major f32/f64 matrices, one matrix of a batch at a time.
//! The GPU backends either run their own (cuSOLVER) or come here through a
//! host copy.

use faer::{Mat, Side};

use crate::error::{Error, Result};

/// Which factorization to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decomposition {
    /// `A = L Lᵀ` with `L` lower triangular (A square, symmetric positive definite).
    Cholesky,
    /// `A = Q R`, `Q` m×k with orthonormal columns, `R` k×n upper triangular, k = min(m, n).
    Qr,
    /// `A = U diag(S) Vᵀ`, `U` m×k, `S` k (descending, non-negative), `Vᵀ` k×n.
    Svd,
}

impl Decomposition {
    pub fn name(self) -> &'static str {
        match self {
            Decomposition::Cholesky => "cholesky",
            Decomposition::Qr => "qr",
            Decomposition::Svd => "svd",
        }
    }

    /// Shapes of the factors of one m×n matrix.
    pub fn factor_shapes(self, m: usize, n: usize) -> Vec<Vec<usize>> {
        let k = m.min(n);
        match self {
            Decomposition::Cholesky => vec![vec![m, n]],
            Decomposition::Qr => vec![vec![m, k], vec![k, n]],
            Decomposition::Svd => vec![vec![m, k], vec![k], vec![k, n]],
        }
    }
}

/// The scalar types faer factorizes here.
pub trait DecompScalar: faer::traits::RealField + Copy {}
impl DecompScalar for f32 {}
impl DecompScalar for f64 {}

/// Factorizes `batch` row-major m×n matrices stored back to back in `a`.
/// Returns one row-major buffer per factor, each holding the whole batch.
pub fn decompose<T: DecompScalar>(
    kind: Decomposition,
    a: &[T],
    batch: usize,
    m: usize,
    n: usize,
) -> Result<Vec<Vec<T>>> {
    let shapes = kind.factor_shapes(m, n);
    let mut out: Vec<Vec<T>> = shapes
        .iter()
        .map(|s| Vec::with_capacity(batch * s.iter().product::<usize>()))
        .collect();
    for b in 0..batch {
        let base = b * m * n;
        let mat = Mat::from_fn(m, n, |i, j| a[base + i * n + j]);
        match kind {
            Decomposition::Cholesky => {
                let llt = mat
                    .llt(Side::Lower)
                    .map_err(|_| Error::NotPositiveDefinite {
                        op: "cholesky",
                        shape: vec![m, n],
                        batch_index: b,
                    })?;
                let l = llt.L();
                // faer leaves the strict upper triangle of L unspecified; zero it.
                push_row_major(&mut out[0], m, n, |i, j| {
                    if j <= i {
                        l[(i, j)]
                    } else {
                        T::zero_impl()
                    }
                });
            }
            Decomposition::Qr => {
                let qr = mat.qr();
                let q = qr.compute_thin_Q();
                let r = qr.thin_R();
                push_row_major(&mut out[0], m, m.min(n), |i, j| q[(i, j)]);
                push_row_major(&mut out[1], m.min(n), n, |i, j| {
                    if j >= i {
                        r[(i, j)]
                    } else {
                        T::zero_impl()
                    }
                });
            }
            Decomposition::Svd => {
                let svd = mat.thin_svd().map_err(|e| Error::NoConvergence {
                    op: "svd",
                    shape: vec![m, n],
                    why: format!("{e:?}"),
                })?;
                let k = m.min(n);
                let (u, s, v) = (svd.U(), svd.S().column_vector(), svd.V());
                push_row_major(&mut out[0], m, k, |i, j| u[(i, j)]);
                out[1].extend((0..k).map(|i| s[i]));
                push_row_major(&mut out[2], k, n, |i, j| v[(j, i)]);
            }
        }
    }
    Ok(out)
}

fn push_row_major<T: Copy>(
    dst: &mut Vec<T>,
    rows: usize,
    cols: usize,
    f: impl Fn(usize, usize) -> T,
) {
    for i in 0..rows {
        for j in 0..cols {
            dst.push(f(i, j));
        }
    }
}
