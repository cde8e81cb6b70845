//! Dynamic loss scaling for f16/bf16 training, as PyTorch's `GradScaler`:
//! the loss is multiplied by a scale before the backward pass, the
//! gradients are divided by it before the update, a step whose gradients
//! hold an inf or NaN is skipped and halves the scale, and the scale
//! doubles after `growth_interval` clean steps in a row.

use super::{scalar_leaf, Optimizer};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

#[derive(Debug, Clone)]
pub struct GradScaler {
    pub scale: f64,
    pub growth_factor: f64,
    pub backoff_factor: f64,
    pub growth_interval: u32,
    clean_steps: u32,
    /// Steps skipped because of non-finite gradients.
    pub skipped: u64,
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler {
            scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            clean_steps: 0,
            skipped: 0,
        }
    }
}

impl GradScaler {
    /// A scaler starting at `scale` that doubles after `growth_interval`
    /// clean steps (PyTorch's defaults otherwise).
    pub fn new(scale: f64, growth_interval: u32) -> GradScaler {
        GradScaler {
            scale,
            growth_interval,
            ..Default::default()
        }
    }

    /// `loss · scale` (in f32 at least, so the scale itself is exact).
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        let l = loss.cast(DType::promote(loss.dtype(), DType::F32))?;
        l.mul(&scalar_leaf(self.scale, &l)?)
    }

    /// Unscales `grads` (of the scaled loss), and applies the optimiser
    /// step unless one of them holds an inf or NaN. `with` is realized
    /// either way. Returns whether the step was taken.
    pub fn step(
        &mut self,
        opt: &mut dyn Optimizer,
        grads: &[Tensor],
        with: &[Tensor],
    ) -> Result<bool> {
        let mut unscaled = Vec::with_capacity(grads.len());
        let mut bad: Option<Tensor> = None;
        for g in grads {
            let g32 = g.cast(DType::promote(g.dtype(), DType::F32))?;
            let u = g32.mul(&scalar_leaf(1.0 / self.scale, &g32)?)?;
            // x·0 is NaN exactly when x is inf or NaN.
            let z = g32.mul_scalar(0.0)?;
            let count = z.ne(&z)?.cast(DType::F32)?.sum(&[], false)?;
            bad = Some(match bad {
                Some(b) => b.add(&count)?,
                None => count,
            });
            unscaled.push(u);
        }
        let mut first: Vec<Tensor> = unscaled.clone();
        first.extend(with.iter().cloned());
        if let Some(b) = &bad {
            first.push(b.clone());
        }
        Tensor::realize_all(&first)?;
        let found_inf = match &bad {
            Some(b) => b.item::<f32>()? > 0.0,
            None => false,
        };
        if found_inf {
            self.scale *= self.backoff_factor;
            self.clean_steps = 0;
            self.skipped += 1;
            return Ok(false);
        }
        opt.step(&unscaled, &[])?;
        self.clean_steps += 1;
        if self.clean_steps >= self.growth_interval {
            self.scale *= self.growth_factor;
            self.clean_steps = 0;
        }
        Ok(true)
    }
}
