//! Gradient checks: the backward graph built by `autograd` is checked twice.
//!
//! 1. Its math, against central finite differences: everything in f64 on
//!    the reference path. The loss is `sum(f(x) * r)` with a fixed random
//!    `r`, so the check covers a whole vector-Jacobian product, not just
//!    the gradient of a sum. With `h = 1e-5·max(1, |x|)` the truncation
//!    error is `O(h²)` ≈ 1e-10 and the rounding error ≈ 1e-16/h ≈ 1e-11, so
//!    [`FD_TOL`] = 1e-6 (relative above 1, absolute below) has a wide margin
//!    for smooth functions away from kinks.
//! 2. Its execution on a backend in a given dtype, against the reference
//!    path evaluating the same backward graph op by op, with the usual
//!    [`Tol`] table.

use fusegraph_core::backend::cpu::reference;
use fusegraph_core::{autograd, DType, Device, Result, Tensor};

use crate::{compare, leaf, Tol};

/// Allowed difference between the f64 analytic gradient and central finite differences.
pub const FD_TOL: f64 = 1e-6;

/// One input of a checked function.
#[derive(Debug, Clone)]
pub struct Input {
    pub values: Vec<f64>,
    pub shape: Vec<usize>,
    /// Stored transposed (last two axes), so the function sees a
    /// non-contiguous view.
    pub transposed: bool,
}

impl Input {
    /// Values drawn uniformly from `[lo, hi)` with a seed.
    pub fn uniform(shape: &[usize], seed: u64, lo: f64, hi: f64) -> Input {
        let n: usize = shape.iter().product();
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let values = (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
            })
            .collect();
        Input {
            values,
            shape: shape.to_vec(),
            transposed: false,
        }
    }

    /// The same values seen through a transposed (non-contiguous) layout.
    pub fn transposed(mut self) -> Input {
        self.transposed = true;
        self
    }

    /// A realized leaf on `dev` in `dtype` with these values (logical
    /// order), then made a gradient target.
    pub fn tensor(&self, values: &[f64], dtype: DType, dev: &Device) -> Result<Tensor> {
        let r = self.shape.len();
        let t = if self.transposed && r >= 2 {
            let mut stored = self.shape.clone();
            stored.swap(r - 2, r - 1);
            // values are logical (row-major over `shape`): store them transposed.
            let logical = Tensor::from_vec(values.to_vec(), self.shape.clone(), &Device::Cpu)?;
            let st: Vec<f64> = logical.t()?.contiguous()?.to_vec()?;
            leaf(&st, &stored, dtype, dev)?.t()?
        } else {
            leaf(values, &self.shape, dtype, dev)?
        };
        Ok(t.requires_grad())
    }
}

fn weights(shape: &[usize], dtype: DType, dev: &Device) -> Result<Tensor> {
    let r = Input::uniform(shape, 0xC0FFEE, -1.0, 1.0);
    leaf(&r.values, shape, dtype, dev)
}

fn loss_of(out: &Tensor, dev: &Device) -> Result<Tensor> {
    let r = weights(out.shape(), out.dtype(), dev)?;
    out.mul(&r)?.sum(&[], false)
}

/// Checks the gradients of `f` at `inputs` against finite differences in
/// f64 (panics with the case, input and element on mismatch).
pub fn check_fd(
    what: &str,
    inputs: &[Input],
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<()> {
    let cpu = Device::Cpu;
    let xs: Vec<Tensor> = inputs
        .iter()
        .map(|i| i.tensor(&i.values, DType::F64, &cpu))
        .collect::<Result<_>>()?;
    let loss = loss_of(&f(&xs)?, &cpu)?;
    let refs: Vec<&Tensor> = xs.iter().collect();
    let grads = autograd::grad(&loss, &refs)?;
    for (k, (input, g)) in inputs.iter().zip(&grads).enumerate() {
        assert_eq!(
            g.shape(),
            input.shape.as_slice(),
            "{what}: gradient {k} shape"
        );
        let analytic: Vec<f64> = reference::evaluate(g)?.iter().copied().collect();
        let mut numeric = Vec::with_capacity(analytic.len());
        for e in 0..input.values.len() {
            let h = 1e-5 * input.values[e].abs().max(1.0);
            let at = |delta: f64| -> Result<f64> {
                let xs: Vec<Tensor> = inputs
                    .iter()
                    .enumerate()
                    .map(|(j, i)| {
                        let mut v = i.values.clone();
                        if j == k {
                            v[e] += delta;
                        }
                        i.tensor(&v, DType::F64, &cpu)
                    })
                    .collect::<Result<_>>()?;
                let l = loss_of(&f(&xs)?, &cpu)?;
                Ok(reference::evaluate(&l)?.iter().copied().sum())
            };
            numeric.push((at(h)? - at(-h)?) / (2.0 * h));
        }
        let worst = analytic
            .iter()
            .zip(&numeric)
            .map(|(a, n)| (a - n).abs() / n.abs().max(1.0))
            .fold(0.0f64, f64::max);
        // Shown with --nocapture: the margin each case has under FD_TOL.
        eprintln!("{what}: input {k}: max |analytic - finite difference| = {worst:.2e}");
        let tol = Tol {
            dtype: DType::F64,
            tol: FD_TOL,
        };
        if let Err(m) = compare(
            &format!("{what}: d/d input {k} vs finite differences"),
            &analytic,
            &numeric,
            tol,
        ) {
            panic!("{m}");
        }
    }
    Ok(())
}

/// Computes the gradients of `f` on `dev` in `dtype` and checks each one
/// against the reference path evaluating the same backward graph, with
/// `tol`. Returns the gradients (realized).
pub fn check_backend(
    what: &str,
    inputs: &[Input],
    dtype: DType,
    dev: &Device,
    tol: Tol,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<Vec<Tensor>> {
    let xs: Vec<Tensor> = inputs
        .iter()
        .map(|i| i.tensor(&i.values, dtype, dev))
        .collect::<Result<_>>()?;
    let loss = loss_of(&f(&xs)?, dev)?;
    let refs: Vec<&Tensor> = xs.iter().collect();
    let grads = autograd::grad(&loss, &refs)?;
    // The reference goes first: once realized, a node is just its values.
    let wants: Vec<Vec<f64>> = grads
        .iter()
        .map(|g| Ok(reference::evaluate(g)?.iter().copied().collect()))
        .collect::<Result<_>>()?;
    let mut all = vec![loss.clone()];
    all.extend(grads.iter().cloned());
    Tensor::realize_all(&all)?;
    for (k, (g, want)) in grads.iter().zip(&wants).enumerate() {
        assert_eq!(g.dtype(), dtype, "{what}: gradient {k} dtype");
        let got = g.to_vec_f64()?;
        if let Err(m) = compare(&format!("{what} ({dtype}): gradient {k}"), &got, want, tol) {
            panic!("{m}");
        }
    }
    Ok(grads)
}
