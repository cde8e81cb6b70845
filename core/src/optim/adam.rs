//! Adam and AdamW, as PyTorch's (`amsgrad=False`): bias-corrected moments;
//! AdamW decays the weights directly, Adam adds `weight_decay·p` to the
//! gradient.

use super::{check_grads, distinct_buffers, realize_step, restore_params, Optimizer, ScalarCache};
use crate::backend::cpu::CpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
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
    /// `(1 - beta1^t, 1 - beta2^t)` as f32 device scalars, advanced on the
    /// device by `c' = (1 - beta) + beta·c` (no cancellation, so no loss of
    /// precision as `beta^t` nears 1): a recorded step that replays still
    /// corrects by the right step count. `None` without parameters.
    bias: Option<(Tensor, Tensor)>,
    lr_leaf: ScalarCache,
    decay_leaf: ScalarCache,
}

impl Adam {
    pub fn new(params: Vec<Param>, options: AdamOptions) -> Result<Adam> {
        // Zeros uploaded per tensor, not one lazy `zeros` shared: every
        // moment needs a buffer of its own for `step_in_place`.
        let zeros = |t: &Tensor| {
            let host = CpuStorage::try_zeros("adam", t.dtype(), t.numel())?;
            Tensor::from_storage(host, Layout::contiguous(t.shape()), *t.device())
        };
        let moments = params
            .iter()
            .map(|p| {
                let w = p.value();
                Ok((zeros(&w)?, zeros(&w)?))
            })
            .collect::<Result<Vec<_>>>()?;
        // 1 - beta^0 = 0 for both corrections.
        let bias = match params.first() {
            Some(p) => {
                let c = Tensor::zeros((), DType::F32, p.value().device())?;
                Some((zeros(&c)?, zeros(&c)?))
            }
            None => None,
        };
        Ok(Adam {
            params,
            options,
            t: 0,
            moments,
            bias,
            lr_leaf: ScalarCache::default(),
            decay_leaf: ScalarCache::default(),
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
        let bias = match &self.bias {
            Some((c1, c2)) => Some((
                c1.mul_scalar(o.beta1)?.add_scalar(1.0 - o.beta1)?,
                c2.mul_scalar(o.beta2)?.add_scalar(1.0 - o.beta2)?,
            )),
            None => None,
        };
        let mut new_p = Vec::with_capacity(self.params.len());
        let mut new_m = Vec::with_capacity(self.params.len());
        for ((p, g), (m, v)) in self.params.iter().zip(grads).zip(&self.moments) {
            let w = p.value();
            let Some((bc1, bc2)) = &bias else { break };
            let lr = self.lr_leaf.get(o.lr, &w)?;
            let step_size = lr.div(&bc1.cast(w.dtype())?)?;
            let inv_sqrt_bc2 = bc2.rsqrt()?.cast(w.dtype())?;
            let mut g = g.cast(w.dtype())?;
            let mut w0 = w.clone();
            if o.weight_decay != 0.0 {
                if o.decoupled {
                    w0 = w.mul(&self.decay_leaf.get(1.0 - o.lr * o.weight_decay, &w)?)?;
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
        updates.extend(bias.iter().flat_map(|(a, b)| [a.clone(), b.clone()]));
        realize_step(&updates, with)?;
        for (p, v) in self.params.iter().zip(new_p) {
            p.set_realized(v);
        }
        let owned = distinct_buffers(new_m.into_iter().flat_map(|(m, v)| [m, v]).collect())?;
        self.moments = owned
            .chunks_exact(2)
            .map(|mv| (mv[0].clone(), mv[1].clone()))
            .collect();
        self.bias = bias;
        self.t = t;
        Ok(())
    }

    fn state(&self) -> Vec<Tensor> {
        let mut s: Vec<Tensor> = self.params.iter().map(Param::value).collect();
        for (m, v) in &self.moments {
            s.push(m.clone());
            s.push(v.clone());
        }
        s.extend(self.bias.iter().flat_map(|(a, b)| [a.clone(), b.clone()]));
        s
    }

    fn set_state(&mut self, state: Vec<Tensor>) -> Result<()> {
        let mut it = restore_params("adam", &self.params, &self.state(), state)?;
        for (m, v) in &mut self.moments {
            if let (Some(a), Some(b)) = (it.next(), it.next()) {
                (*m, *v) = (a, b);
            }
        }
        if let (Some(bias), Some(a), Some(b)) = (&mut self.bias, it.next(), it.next()) {
            *bias = (a, b);
        }
        Ok(())
    }
}
