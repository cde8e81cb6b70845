//! Adam and AdamW, as PyTorch's (`amsgrad=False`): bias-corrected moments;
//! AdamW decays the weights directly, Adam adds `weight_decay·p` to the
//! gradient. The parameters are packed into one buffer per dtype and
//! device (`flat`), so a step updates all of them with one kernel for each
//! moment and one for the values.

use super::flat::Packing;
use super::{check_grads, check_state, distinct_buffers, realize_step, Optimizer, ScalarCache};
use crate::backend::cpu::CpuStorage;
use crate::device::Device;
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
    packing: Packing,
    /// The two moments of each group, laid out as its parameter buffer.
    moments: Vec<(Tensor, Tensor)>,
    /// `(1 - beta1^t, 1 - beta2^t)` as f32 device scalars (f64 with f64
    /// parameters), advanced on the device by `c' = (1 - beta) + beta·c`
    /// (no cancellation, so no loss of precision as `beta^t` nears 1): a
    /// recorded step that replays still corrects by the right step count.
    /// `None` without parameters.
    bias: Option<(Tensor, Tensor)>,
    lr_leaf: ScalarCache,
    decay_leaf: ScalarCache,
}

/// A zero-filled dense buffer of its own (every state tensor needs one for
/// `step_in_place`, so not one lazy `zeros` shared).
fn zeros(what: &'static str, dtype: DType, shape: &[usize], device: Device) -> Result<Tensor> {
    let numel = shape.iter().product();
    let host = CpuStorage::try_zeros(what, dtype, numel)?;
    Tensor::from_storage(host, Layout::contiguous(shape), device)
}

impl Adam {
    /// Packs the parameters into their group buffers now (see `flat`), so
    /// the state has its final form before the first step.
    pub fn new(params: Vec<Param>, options: AdamOptions) -> Result<Adam> {
        let mut packing = Packing::new(&params);
        packing.ensure(&params)?;
        let moments = packing
            .groups()
            .iter()
            .map(|g| {
                let m = zeros("adam", g.dtype, &[g.numel], g.device)?;
                Ok((m, zeros("adam", g.dtype, &[g.numel], g.device)?))
            })
            .collect::<Result<Vec<_>>>()?;
        // 1 - beta^0 = 0 for both corrections; f64 when some parameters
        // are f64 (f32 corrections would round their updates at 1e-8).
        let wide = packing.groups().iter().any(|g| g.dtype == DType::F64);
        let dtype = if wide { DType::F64 } else { DType::F32 };
        let bias = match packing.groups().first() {
            Some(g) => Some((
                zeros("adam", dtype, &[], g.device)?,
                zeros("adam", dtype, &[], g.device)?,
            )),
            None => None,
        };
        Ok(Adam {
            params,
            options,
            t: 0,
            packing,
            moments,
            bias,
            lr_leaf: ScalarCache::default(),
            decay_leaf: ScalarCache::default(),
        })
    }

    /// The new parameter buffers, moments (two per group) and bias
    /// corrections of a step, lazy.
    #[allow(clippy::type_complexity)]
    fn build(
        &mut self,
        grads: &[Tensor],
    ) -> Result<(Vec<Tensor>, Vec<Tensor>, Option<(Tensor, Tensor)>)> {
        check_grads("adam", &self.params, grads)?;
        let o = self.options;
        let flats = self.packing.ensure(&self.params)?;
        let bias = match &self.bias {
            Some((c1, c2)) => Some((
                c1.mul_scalar(o.beta1)?.add_scalar(1.0 - o.beta1)?,
                c2.mul_scalar(o.beta2)?.add_scalar(1.0 - o.beta2)?,
            )),
            None => None,
        };
        let mut new_p = Vec::with_capacity(flats.len());
        let mut new_m = Vec::with_capacity(2 * flats.len());
        for (k, (w, (m, v))) in flats.iter().zip(&self.moments).enumerate() {
            let Some((bc1, bc2)) = &bias else { break };
            let lr = self.lr_leaf.get(o.lr, w)?;
            let step_size = lr.div(&bc1.cast(w.dtype())?)?;
            let inv_sqrt_bc2 = bc2.rsqrt()?.cast(w.dtype())?;
            let mut g = self.packing.gather(k, grads)?;
            let mut w0 = w.clone();
            if o.weight_decay != 0.0 {
                if o.decoupled {
                    w0 = w.mul(&self.decay_leaf.get(1.0 - o.lr * o.weight_decay, w)?)?;
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
            new_m.push(m2);
            new_m.push(v2);
        }
        Ok((new_p, new_m, bias))
    }
}

impl Optimizer for Adam {
    fn params(&self) -> &[Param] {
        &self.params
    }

    fn step(&mut self, grads: &[Tensor], with: &[Tensor]) -> Result<()> {
        let (new_p, new_m, bias) = self.build(grads)?;
        let groups = new_p.len();
        let mut updates = new_p;
        updates.extend(new_m);
        let mut all = updates.clone();
        all.extend(bias.iter().flat_map(|(a, b)| [a.clone(), b.clone()]));
        realize_step(&all, with)?;
        let mut owned = distinct_buffers(updates)?;
        let moments = owned.split_off(groups);
        self.packing.install(&self.params, owned)?;
        self.moments = moments
            .chunks_exact(2)
            .map(|mv| (mv[0].clone(), mv[1].clone()))
            .collect();
        self.bias = bias;
        self.t += 1;
        Ok(())
    }

    fn updates(&mut self, grads: &[Tensor]) -> Result<Vec<Tensor>> {
        let (mut new_p, new_m, bias) = self.build(grads)?;
        new_p.extend(new_m);
        new_p.extend(bias.into_iter().flat_map(|(a, b)| [a, b]));
        Ok(new_p)
    }

    fn state(&self) -> Vec<Tensor> {
        let mut s = self.packing.values(&self.params);
        for (m, v) in &self.moments {
            s.push(m.clone());
            s.push(v.clone());
        }
        s.extend(self.bias.iter().flat_map(|(a, b)| [a.clone(), b.clone()]));
        s
    }

    fn set_state(&mut self, state: Vec<Tensor>) -> Result<()> {
        check_state("adam", &self.state(), &state)?;
        let mut it = state.into_iter();
        self.packing.restore(&self.params, &mut it)?;
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
