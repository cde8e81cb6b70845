//! Stochastic gradient descent with momentum and weight decay, as PyTorch's
//! `SGD` (dampening 0, not Nesterov).

use super::{check_grads, distinct_buffers, realize_step, restore_params, Optimizer, ScalarCache};
use crate::error::Result;
use crate::nn::Param;
use crate::tensor::Tensor;

#[derive(Debug)]
pub struct Sgd {
    params: Vec<Param>,
    pub lr: f64,
    pub momentum: f64,
    pub weight_decay: f64,
    velocity: Vec<Option<Tensor>>,
    lr_leaf: ScalarCache,
}

impl Sgd {
    pub fn new(params: Vec<Param>, lr: f64, momentum: f64, weight_decay: f64) -> Sgd {
        let velocity = vec![None; params.len()];
        Sgd {
            params,
            lr,
            momentum,
            weight_decay,
            velocity,
            lr_leaf: ScalarCache::default(),
        }
    }
}

impl Optimizer for Sgd {
    fn params(&self) -> &[Param] {
        &self.params
    }

    fn step(&mut self, grads: &[Tensor], with: &[Tensor]) -> Result<()> {
        check_grads("sgd", &self.params, grads)?;
        let mut new_p = Vec::with_capacity(self.params.len());
        let mut new_v = Vec::with_capacity(self.params.len());
        for ((p, g), v) in self.params.iter().zip(grads).zip(&self.velocity) {
            let w = p.value();
            let lr = self.lr_leaf.get(self.lr, &w)?;
            let mut d = g.cast(w.dtype())?;
            if self.weight_decay != 0.0 {
                d = d.add(&w.mul_scalar(self.weight_decay)?)?;
            }
            if self.momentum != 0.0 {
                // v' = momentum·v + d; the first step starts from v = d.
                d = match v {
                    Some(v) => v.mul_scalar(self.momentum)?.add(&d)?,
                    None => d,
                };
                new_v.push(Some(d.clone()));
            } else {
                new_v.push(None);
            }
            new_p.push(w.sub(&d.mul(&lr)?)?);
        }
        let mut updates = new_p.clone();
        updates.extend(new_v.iter().flatten().cloned());
        realize_step(&updates, with)?;
        for (p, v) in self.params.iter().zip(new_p) {
            p.set_realized(v);
        }
        // The first velocity is the gradient itself, which may be a view
        // (a convolution's weight gradient is a permuted one) or another
        // parameter's gradient: each gets a buffer of its own so
        // `step_in_place` can write into it.
        let mut owned = distinct_buffers(new_v.iter().flatten().cloned().collect())?.into_iter();
        self.velocity = new_v
            .into_iter()
            .map(|v| v.and_then(|_| owned.next()))
            .collect();
        Ok(())
    }

    fn state(&self) -> Vec<Tensor> {
        let params = self.params.iter().map(Param::value);
        params
            .chain(self.velocity.iter().flatten().cloned())
            .collect()
    }

    fn set_state(&mut self, state: Vec<Tensor>) -> Result<()> {
        let mut it = restore_params("sgd", &self.params, &self.state(), state)?;
        for v in self.velocity.iter_mut().flatten() {
            if let Some(t) = it.next() {
                *v = t;
            }
        }
        Ok(())
    }
}
