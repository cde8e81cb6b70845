//! Adam and AdamW, as PyTorch's (`amsgrad=False`): bias-corrected moments;
//! AdamW decays the weights directly, Adam adds `weight_decay·p` to the
//! gradient.

use super::{check_grads, realize_step, scalar_leaf, Optimizer};
use crate::error::Result;
use crate::nn::Param;
use crate::tensor::Tensor;

#[derive(Debug, Clone, Copy)]
pub struct AdamOptions {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    /// Decoupled weight decay (AdamW) instead of L2 on the gradient.
    pub decoupled: bool,
}

impl Default for AdamOptions {
    fn default() -> Self {
        AdamOptions {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
        }
    }
}

impl AdamOptions {
    /// AdamW with PyTorch's default decay of 0.01.
    pub fn adamw(lr: f64) -> AdamOptions {
        AdamOptions {
            lr,
            weight_decay: 0.01,
            decoupled: true,
            ..Default::default()
        }
    }
}

#[derive(Debug)]
pub struct Adam {
    params: Vec<Param>,
    pub options: AdamOptions,
    /// Steps taken so far.
    pub t: u64,
    moments: Vec<(Tensor, Tensor)>,
}

impl Adam {
    pub fn new(params: Vec<Param>, options: AdamOptions) -> Result<Adam> {
        let moments = params
            .iter()
            .map(|p| {
                let z = p.value().zeros_like()?;
                Ok((z.clone(), z))
            })
            .collect::<Result<Vec<_>>>()?;
        let zeros: Vec<Tensor> = moments.iter().map(|m| m.0.clone()).collect();
        Tensor::realize_all(&zeros)?;
        Ok(Adam {
            params,
            options,
            t: 0,
            moments,
        })
    }
}

impl Optimizer for Adam {
    fn params(&self) -> &[Param] {
        &self.params
    }

    fn step(&mut self, grads: &[Tensor], with: &[Tensor]) -> Result<()> {
        check_grads("adam", &self.params, grads)?;
        let o = self.options;
        let t = self.t + 1;
        let bc1 = 1.0 - o.beta1.powi(t as i32);
        let bc2 = 1.0 - o.beta2.powi(t as i32);
        let mut new_p = Vec::with_capacity(self.params.len());
        let mut new_m = Vec::with_capacity(self.params.len());
        for ((p, g), (m, v)) in self.params.iter().zip(grads).zip(&self.moments) {
            let w = p.value();
            let step_size = scalar_leaf(o.lr / bc1, &w)?;
            let inv_sqrt_bc2 = scalar_leaf(1.0 / bc2.sqrt(), &w)?;
            let mut g = g.cast(w.dtype())?;
            let mut w0 = w.clone();
            if o.weight_decay != 0.0 {
                if o.decoupled {
                    w0 = w.mul(&scalar_leaf(1.0 - o.lr * o.weight_decay, &w)?)?;
                } else {
                    g = g.add(&w.mul_scalar(o.weight_decay)?)?;
                }
            }
            let m2 = m.mul_scalar(o.beta1)?.add(&g.mul_scalar(1.0 - o.beta1)?)?;
            let v2 = v
                .mul_scalar(o.beta2)?
                .add(&g.mul(&g)?.mul_scalar(1.0 - o.beta2)?)?;
            let denom = v2.sqrt()?.mul(&inv_sqrt_bc2)?.add_scalar(o.eps)?;
            new_p.push(w0.sub(&m2.mul(&step_size)?.div(&denom)?)?);
            new_m.push((m2, v2));
        }
        let mut updates = new_p.clone();
        for (m, v) in &new_m {
            updates.push(m.clone());
            updates.push(v.clone());
        }
        realize_step(&updates, with)?;
        for (p, v) in self.params.iter().zip(new_p) {
            p.set_realized(v);
        }
        self.moments = new_m;
        self.t = t;
        Ok(())
    }
}
