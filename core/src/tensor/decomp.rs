//! Matrix decompositions: Cholesky, QR and SVD over the last two axes (the
//! leading axes are a batch), in f32 and f64. They run eagerly: the input
//! is realized, factorized, and the factors come back as realized tensors
//! on the input's device. A GPU backend may factorize on the device
//! ([`Backend::decompose`](crate::backend::Backend::decompose)); otherwise
//! the matrices go through the host (faer).

use super::svd_refine::refined;
use super::Tensor;
use crate::auto;
use crate::backend::cpu::decomp::{decompose, Decomposition};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

impl Tensor {
    /// The lower-triangular `L` with `self = L Lᵀ`, for a symmetric
    /// positive-definite `[.., n, n]` tensor (only the lower triangle is read).
    ///
    /// ```
    /// use fusegraph_core::{Device, Tensor};
    /// let a = Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 3.0], [2, 2], &Device::Cpu)?;
    /// let l = a.cholesky()?.to_vec::<f64>()?;
    /// assert!((l[0] - 2.0).abs() < 1e-12 && l[1] == 0.0 && (l[2] - 1.0).abs() < 1e-12);
    /// # Ok::<(), fusegraph_core::Error>(())
    /// ```
    pub fn cholesky(&self) -> Result<Tensor> {
        let mut f = self.decompose(Decomposition::Cholesky)?;
        f.pop().ok_or_else(|| missing("cholesky"))
    }

    /// The reduced QR decomposition `self = Q R` of a `[.., m, n]` tensor:
    /// `Q` is `[.., m, k]` with orthonormal columns, `R` is `[.., k, n]` upper
    /// triangular, `k = min(m, n)` (NumPy's `mode="reduced"`).
    pub fn qr(&self) -> Result<(Tensor, Tensor)> {
        let mut f = self.decompose(Decomposition::Qr)?.into_iter();
        match (f.next(), f.next()) {
            (Some(q), Some(r)) => Ok((q, r)),
            _ => Err(missing("qr")),
        }
    }

    /// The thin SVD `self = U diag(S) Vᵀ` of a `[.., m, n]` tensor: `U` is
    /// `[.., m, k]`, `S` is `[.., k]` (descending, non-negative), `Vᵀ` is
    /// `[.., k, n]`, `k = min(m, n)` (`torch.linalg.svd(full_matrices=False)`).
    ///
    /// An f32 SVD computed by a GPU's solver is refined once more in f64 on
    /// the device (see `svd_refine.rs`), so its factors are as accurate as
    /// the CPU's.
    pub fn svd(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let (factors, on_device) = self.decompose_where(Decomposition::Svd)?;
        let mut f = factors.into_iter();
        let (u, s, vt) = match (f.next(), f.next(), f.next()) {
            (Some(u), Some(s), Some(vt)) => (u, s, vt),
            _ => return Err(missing("svd")),
        };
        if !(on_device && self.dtype() == DType::F32) {
            return Ok((u, s, vt));
        }
        self.refined_svd(u, vt)
    }

    /// The factors of an f32 SVD from a device solver, refined in f64.
    fn refined_svd(&self, u: Tensor, vt: Tensor) -> Result<(Tensor, Tensor, Tensor)> {
        let wide = |t: &Tensor| t.cast(DType::F64);
        let (u, s, vt) = refined(&wide(self)?, &wide(&u)?, &wide(&vt)?)?;
        let narrow = |t: &Tensor| -> Result<Tensor> {
            let t = t.cast(DType::F32)?;
            t.realize()?;
            Ok(t)
        };
        Ok((narrow(&u)?, narrow(&s)?, narrow(&vt)?))
    }

    fn decompose(&self, kind: Decomposition) -> Result<Vec<Tensor>> {
        Ok(self.decompose_where(kind)?.0)
    }

    /// The factors, and whether a device solver computed them.
    fn decompose_where(&self, kind: Decomposition) -> Result<(Vec<Tensor>, bool)> {
        let op = kind.name();
        if self.rank() < 2 {
            return Err(Error::RankTooLow {
                op,
                min: 2,
                shape: self.shape().to_vec(),
            });
        }
        let r = self.rank();
        let (m, n) = (self.shape()[r - 2], self.shape()[r - 1]);
        if kind == Decomposition::Cholesky && m != n {
            return Err(Error::InvalidArgument {
                op,
                what: "matrix shape",
                expected: "square matrices",
                got: format!("{:?}", self.shape()),
            });
        }
        if !matches!(self.dtype(), DType::F32 | DType::F64) {
            return Err(unsupported(op, self.dtype()));
        }
        let batch_shape = &self.shape()[..r - 2];
        let batch: usize = batch_shape.iter().product();
        let shapes: Vec<Vec<usize>> = kind
            .factor_shapes(m, n)
            .into_iter()
            .map(|s| batch_shape.iter().copied().chain(s).collect())
            .collect();
        if let Some(factors) = self.decompose_on_device(kind, batch, m, n)? {
            return Ok((
                self.factors_from_lapack(kind, factors, batch_shape, m, n)?,
                true,
            ));
        }
        let factors = match self.dtype() {
            DType::F32 => wrap(
                decompose(kind, &self.to_vec::<f32>()?, batch, m, n)?,
                &shapes,
                self,
            )?,
            DType::F64 => wrap(
                decompose(kind, &self.to_vec::<f64>()?, batch, m, n)?,
                &shapes,
                self,
            )?,
            dtype => return Err(unsupported(op, dtype)),
        };
        Ok((factors, false))
    }
}

impl Tensor {
    /// The factors from the device's solver, or `None` when the work goes
    /// through the host: on the CPU, when the backend has no solver, or when
    /// Auto places it on the CPU (by size, or after a GPU failure it logs).
    fn decompose_on_device(
        &self,
        kind: Decomposition,
        batch: usize,
        m: usize,
        n: usize,
    ) -> Result<Option<Vec<crate::backend::Storage>>> {
        if self.device.is_cpu() {
            return Ok(None);
        }
        // Row-major Aᵀ is column-major A, the order device solvers take.
        let col_major = self.transpose(-2, -1)?.contiguous()?;
        let storage = col_major.realized_storage()?;
        if self.device != Device::Auto {
            let backend = crate::backend::get(self.device)?;
            return backend.decompose(kind, &storage, batch, m, n).transpose();
        }
        // About m·n·min(m, n) multiply-adds per matrix, for every kind.
        let flops = 2 * (batch * m * n * m.min(n)) as u64;
        let target = auto::place_checked(flops, [storage.as_ref()], [self.dtype()].into_iter());
        if target == Device::Cpu {
            return Ok(None);
        }
        let on_gpu = auto::moved(&storage, target).and_then(|s| {
            let backend = crate::backend::get(target)?;
            backend.decompose(kind, &s, batch, m, n).transpose()
        });
        match on_gpu {
            Ok(factors) => Ok(factors),
            Err(e) if auto::is_recoverable(&e) => {
                auto::record_fallback(target, &e);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Tensors over the column-major factors a device solver returned (see
    /// [`Backend::decompose`](crate::backend::Backend::decompose)): a
    /// column-major r×c matrix is a row-major c×r one, transposed as a view;
    /// the triangle the solver leaves unspecified is masked to zero.
    fn factors_from_lapack(
        &self,
        kind: Decomposition,
        factors: Vec<crate::backend::Storage>,
        batch_shape: &[usize],
        m: usize,
        n: usize,
    ) -> Result<Vec<Tensor>> {
        let k = m.min(n);
        // (rows, cols) of each factor as stored, column-major; None for S.
        let stored: Vec<Option<(usize, usize)>> = match kind {
            Decomposition::Cholesky => vec![Some((n, n))],
            Decomposition::Qr => vec![Some((m, k)), Some((k, n))],
            Decomposition::Svd => vec![Some((m, k)), None, Some((n, k))],
        };
        if factors.len() != stored.len() {
            return Err(missing(kind.name()));
        }
        let mut out = Vec::with_capacity(factors.len());
        for (i, (storage, dims)) in factors.into_iter().zip(stored).enumerate() {
            let t = match dims {
                None => {
                    let shape: Vec<usize> = batch_shape.iter().copied().chain([k]).collect();
                    Tensor::from_device_storage(storage, &shape, self.device)?
                }
                Some((rows, cols)) => {
                    let shape: Vec<usize> =
                        batch_shape.iter().copied().chain([cols, rows]).collect();
                    let t = Tensor::from_device_storage(storage, &shape, self.device)?;
                    // V (n×k) column-major is Vᵀ (k×n) row-major: no transpose.
                    if kind == Decomposition::Svd && i == 2 {
                        t
                    } else {
                        t.transpose(-2, -1)?
                    }
                }
            };
            out.push(match (kind, i) {
                (Decomposition::Cholesky, 0) => triangle(&t, Triangle::Lower)?,
                (Decomposition::Qr, 1) => triangle(&t, Triangle::Upper)?,
                _ => t,
            });
        }
        Ok(out)
    }
}

#[derive(Clone, Copy)]
enum Triangle {
    Lower,
    Upper,
}

/// `t` with the elements outside the triangle (of its last two axes) set to zero.
fn triangle(t: &Tensor, keep: Triangle) -> Result<Tensor> {
    let r = t.rank();
    let (rows, cols) = (t.shape()[r - 2], t.shape()[r - 1]);
    let i = Tensor::arange(0.0, rows as f64, 1.0, DType::I32, t.device())?.reshape([rows, 1])?;
    let j = Tensor::arange(0.0, cols as f64, 1.0, DType::I32, t.device())?.reshape([1, cols])?;
    let mask = match keep {
        Triangle::Lower => i.ge(&j)?,
        Triangle::Upper => i.le(&j)?,
    };
    let zero = Tensor::scalar(0.0, t.dtype(), t.device())?;
    Tensor::where_cond(&mask, t, &zero)
}

fn wrap<T: crate::dtype::Element>(
    factors: Vec<Vec<T>>,
    shapes: &[Vec<usize>],
    like: &Tensor,
) -> Result<Vec<Tensor>> {
    factors
        .into_iter()
        .zip(shapes)
        .map(|(v, s)| Tensor::from_vec(v, s.clone(), like.device()))
        .collect()
}

fn unsupported(op: &'static str, dtype: DType) -> Error {
    Error::UnsupportedDType {
        op,
        dtype,
        why: "decompositions run in f32 or f64: cast first",
    }
}

fn missing(op: &'static str) -> Error {
    Error::Backend {
        op,
        message: "the backend returned fewer factors than the decomposition has".into(),
    }
}
