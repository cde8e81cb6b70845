//! Stochastic gradient descent with momentum and weight decay, as PyTorch's
//! `SGD` (dampening 0, not Nesterov). The parameters are packed into one
//! buffer per dtype and device (`flat`), so a step updates all of them
//! with one kernel for the velocity and one for the values.

use super::flat::Packing;
use super::{check_grads, check_state, distinct_buffers, realize_step, Optimizer, ScalarCache};
use crate::error::Result;
use crate::nn::Param;
use crate::tensor::Tensor;

#[derive(Debug)]
pub struct Sgd {
    params: Vec<Param>,
    pub lr: f64,
    pub momentum: f64,
    pub weight_decay: f64,
    packing: Packing,
    /// One velocity buffer per group, from the first step on (with momentum).
    velocity: Option<Vec<Tensor>>,
    lr_leaf: ScalarCache,
}

impl Sgd {
    pub fn new(params: Vec<Param>, lr: f64, momentum: f64, weight_decay: f64) -> Sgd {
        let packing = Packing::new(&params);
        Sgd {
            params,
            lr,
            momentum,
            weight_decay,
            packing,
            velocity: None,
            lr_leaf: ScalarCache::default(),
        }
    }

    /// The new parameter buffers and velocities of a step, lazy.
    fn build(&mut self, grads: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
        check_grads("sgd", &self.params, grads)?;
        let flats = self.packing.ensure(&self.params)?;
        let mut new_p = Vec::with_capacity(flats.len());
        let mut new_v = Vec::with_capacity(flats.len());
        for (g, w) in flats.iter().enumerate() {
            let lr = self.lr_leaf.get(self.lr, w)?;
            let mut d = self.packing.gather(g, grads)?;
            if self.weight_decay != 0.0 {
                d = d.add(&w.mul_scalar(self.weight_decay)?)?;
            }
            if self.momentum != 0.0 {
                // v' = momentum·v + d; the first step starts from v = d.
                d = match &self.velocity {
                    Some(v) => v[g].mul_scalar(self.momentum)?.add(&d)?,
                    None => d,
                };
                new_v.push(d.clone());
            }
            new_p.push(w.sub(&d.mul(&lr)?)?);
        }
        Ok((new_p, new_v))
    }
}

impl Optimizer for Sgd {
    fn params(&self) -> &[Param] {
        &self.params
    }

    fn step(&mut self, grads: &[Tensor], with: &[Tensor]) -> Result<()> {
        let (new_p, new_v) = self.build(grads)?;
        let groups = new_p.len();
        let mut updates = new_p;
        updates.extend(new_v);
        realize_step(&updates, with)?;
        // The first velocity is the gathered gradient, which for a group of
        // one parameter is that gradient itself (possibly a view): each
        // state tensor gets a dense buffer of its own, which
        // `step_in_place` can write into.
        let mut owned = distinct_buffers(updates)?;
        let velocity = owned.split_off(groups);
        self.packing.install(&self.params, owned)?;
        if self.momentum != 0.0 {
            self.velocity = Some(velocity);
        }
        Ok(())
    }

    fn updates(&mut self, grads: &[Tensor]) -> Result<Vec<Tensor>> {
        let (mut new_p, new_v) = self.build(grads)?;
        new_p.extend(new_v);
        Ok(new_p)
    }

    fn state(&self) -> Vec<Tensor> {
        let mut s = self.packing.values(&self.params);
        s.extend(self.velocity.iter().flatten().cloned());
        s
    }

    fn set_state(&mut self, state: Vec<Tensor>) -> Result<()> {
        check_state("sgd", &self.state(), &state)?;
        let mut it = state.into_iter();
        self.packing.restore(&self.params, &mut it)?;
        if let Some(v) = &mut self.velocity {
            for (slot, t) in v.iter_mut().zip(it) {
                *slot = t;
            }
        }
        Ok(())
    }
}
