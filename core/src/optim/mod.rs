//! Optimisers and dynamic loss scaling.
//!
//! A step builds the update of every parameter (and its optimiser state) as
//! lazy tensors and realizes them all in one graph, together with any
//! tensors passed in `with` (the loss, batch-norm statistics), so the
//! forward, the backward and the update run as one schedule. The update of
//! parameters is a fused elementwise expression over one buffer that holds
//! every parameter of a dtype and device (`flat`: the parameters are
//! views of it), the gradients gathered into one buffer alike, and the
//! state, laid out the same way; the scheduler emits one kernel per buffer
//! written (SGD with momentum: the velocity and the parameters; Adam: the
//! two moments and the parameters), whatever the number of parameters. Values
//! that change every step (bias corrections, the loss scale) are scalar
//! tensors, not constants, so the compiled schedule is reused from step to
//! step.

mod adam;
mod flat;
mod scaler;
mod sgd;

pub use adam::{Adam, AdamOptions};
pub use scaler::GradScaler;
pub use sgd::Sgd;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::nn::Param;
use crate::tensor::Tensor;

/// What every optimiser does.
pub trait Optimizer {
    /// The parameters, in the order `step` expects their gradients.
    fn params(&self) -> &[Param];

    /// Applies one update from `grads` (one per parameter, same shapes) and
    /// realizes `with` in the same graph.
    fn step(&mut self, grads: &[Tensor], with: &[Tensor]) -> Result<()>;

    /// The tensors a step with `grads` would realize (the new parameter
    /// buffers, then the new state), lazy: nothing is computed and the
    /// optimiser's state does not change (packing the parameters, which
    /// the first step does, may happen here). For inspecting what a step
    /// compiles to, as `train_bench --plan` does.
    fn updates(&mut self, grads: &[Tensor]) -> Result<Vec<Tensor>>;

    /// The leaves to take gradients with respect to, in order.
    fn leaves(&self) -> Vec<Tensor> {
        self.params().iter().map(Param::get).collect()
    }

    /// Every tensor carried from one step to the next: the parameters
    /// (one buffer per dtype and device, of which every parameter is a
    /// view, once packed: from the first step on, or from construction
    /// for Adam; each parameter's value before that), then the optimiser's
    /// own state (moments, step counters), in a fixed order. State that
    /// does not exist yet (SGD's velocity before the first step) is left
    /// out.
    fn state(&self) -> Vec<Tensor>;

    /// Puts back tensors taken from [`Optimizer::state`] (same order and
    /// shapes), as the values the next step reads.
    fn set_state(&mut self, state: Vec<Tensor>) -> Result<()>;

    /// [`Optimizer::step`], then the new state is copied into the buffers
    /// the old state occupied ([`Tensor::assign`]) and those tensors stay
    /// in use. Every step then reads and writes the same buffers, which is
    /// what a step recorded once as a CUDA graph needs to replay: take one
    /// ordinary step first (so all state exists), then record closures
    /// that call this one. Costs one extra copy of the state per step
    /// (one copy per state buffer, not per parameter).
    fn step_in_place(&mut self, grads: &[Tensor], with: &[Tensor]) -> Result<()> {
        let before = self.state();
        self.step(grads, with)?;
        let after = self.state();
        if after.len() != before.len() {
            return Err(Error::InvalidArgument {
                op: "step_in_place",
                what: "optimiser state",
                expected: "the same tensors before and after the step (take one step() first)",
                got: format!("{} tensors before, {} after", before.len(), after.len()),
            });
        }
        for (i, old) in before.iter().enumerate() {
            let shared = before[..i].iter().any(|b| b.shares_storage(old));
            if shared || !old.owns_dense_buffer() {
                return Err(Error::InvalidArgument {
                    op: "step_in_place",
                    what: "optimiser state",
                    expected: "tensors that each own a dense buffer",
                    got: format!(
                        "state tensor {i} of shape {:?} is a view or shares its buffer",
                        old.shape()
                    ),
                });
            }
        }
        for (old, new) in before.iter().zip(&after) {
            old.assign(new)?;
        }
        self.set_state(before)
    }
}

/// Optimiser state carried to the next step, each tensor in a dense buffer
/// of its own. A gradient can be a view, and equal expressions share one
/// buffer after common-subexpression elimination: in a residual block the
/// two batch norms whose outputs are added get the same bias gradient, so
/// their first momentum buffers were one tensor, which
/// [`Optimizer::step_in_place`] cannot write twice.
pub(crate) fn distinct_buffers(state: Vec<Tensor>) -> Result<Vec<Tensor>> {
    let mut out: Vec<Tensor> = Vec::with_capacity(state.len());
    for t in state {
        let t = t.to_owned_buffer()?;
        let t = if out.iter().any(|o| o.shares_storage(&t)) {
            t.to_new_buffer()?
        } else {
            t
        };
        out.push(t);
    }
    Ok(out)
}

/// Checks that `state` matches the current state's count and shapes.
pub(crate) fn check_state(op: &'static str, current: &[Tensor], state: &[Tensor]) -> Result<()> {
    let same = current.len() == state.len()
        && current
            .iter()
            .zip(state)
            .all(|(a, b)| a.shape() == b.shape());
    if same {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op,
        what: "state",
        expected: "the tensors state() returns, in order",
        got: format!(
            "{} tensors {:?} for {} {:?}",
            state.len(),
            state.iter().map(|t| t.shape().to_vec()).collect::<Vec<_>>(),
            current.len(),
            current
                .iter()
                .map(|t| t.shape().to_vec())
                .collect::<Vec<_>>()
        ),
    })
}

/// Cached rank-0 leaves for a hyper-parameter (one per dtype and device of
/// the parameters): uploaded again only when the value changes, so a step
/// recorded as a CUDA graph (where uploads are refused) reuses them and an
/// unchanged value costs no copy per step.
#[derive(Debug, Default, Clone)]
pub(crate) struct ScalarCache(Vec<(f64, Tensor)>);

impl ScalarCache {
    pub(crate) fn get(&mut self, v: f64, like: &Tensor) -> Result<Tensor> {
        let same = |t: &Tensor| t.device() == like.device() && t.dtype() == like.dtype();
        match self.0.iter().position(|(_, t)| same(t)) {
            Some(i) if self.0[i].0 == v => return Ok(self.0[i].1.clone()),
            Some(i) => {
                self.0.swap_remove(i);
            }
            None => {}
        }
        let t = scalar_leaf(v, like)?;
        t.realize()?;
        self.0.push((v, t.clone()));
        Ok(t)
    }
}

pub(crate) fn check_grads(op: &'static str, params: &[Param], grads: &[Tensor]) -> Result<()> {
    if params.len() != grads.len() {
        return Err(Error::InvalidArgument {
            op,
            what: "grads",
            expected: "one gradient per parameter",
            got: format!("{} gradients for {} parameters", grads.len(), params.len()),
        });
    }
    for (p, g) in params.iter().zip(grads) {
        if p.shape() != g.shape() {
            return Err(Error::InvalidArgument {
                op,
                what: "gradient shape",
                expected: "the parameter's shape",
                got: format!("{:?} for a parameter of {:?}", g.shape(), p.shape()),
            });
        }
    }
    Ok(())
}

/// A rank-0 leaf of `like`'s dtype holding `v` on its device (a tensor,
/// not a constant, so the graph does not change from step to step).
/// Uploaded as f64 for f64 parameters (an f32 learning rate would round
/// every f64 update at about 1e-8), as f32 otherwise (WebGPU has no f64).
pub(crate) fn scalar_leaf(v: f64, like: &Tensor) -> Result<Tensor> {
    let t = match like.dtype() {
        DType::F64 => Tensor::from_vec(vec![v], (), like.device())?,
        _ => Tensor::from_vec(vec![v as f32], (), like.device())?,
    };
    t.cast(like.dtype())
}

/// Realizes `updates` and `with` in one graph.
pub(crate) fn realize_step(updates: &[Tensor], with: &[Tensor]) -> Result<()> {
    let mut all: Vec<Tensor> = updates.to_vec();
    all.extend(with.iter().cloned());
    Tensor::realize_all(&all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{autograd, DType, Device};

    /// Two identical models, one stepped with `step`, one with
    /// `step_in_place` after a first ordinary step: same losses, and the
    /// in-place one keeps its state tensors.
    fn check(make: impl Fn(Vec<Param>) -> Result<Box<dyn Optimizer>>) -> Result<()> {
        let dev = Device::Cpu;
        let x = Tensor::randn([8, 5], 3, DType::F32, &dev)?;
        let y = Tensor::from_vec((0..8).map(|i| i % 3).collect::<Vec<i32>>(), [8], &dev)?;
        let run = |in_place: bool| -> Result<Vec<f32>> {
            let w = Param::new(Tensor::randn([5, 3], 1, DType::F32, &dev)?)?;
            let b = Param::new(Tensor::zeros([3], DType::F32, &dev)?)?;
            let mut opt = make(vec![w.clone(), b.clone()])?;
            let mut losses = Vec::new();
            for i in 0..4 {
                let loss = x.matmul(&w.get())?.add(&b.get())?.cross_entropy(&y)?;
                let leaves = opt.leaves();
                let refs: Vec<&Tensor> = leaves.iter().collect();
                let grads = autograd::grad(&loss, &refs)?;
                if in_place && i > 0 {
                    let before = opt.state();
                    opt.step_in_place(&grads, std::slice::from_ref(&loss))?;
                    let after = opt.state();
                    assert!(before
                        .iter()
                        .zip(&after)
                        .all(|(a, b)| a.node.id == b.node.id));
                } else {
                    opt.step(&grads, std::slice::from_ref(&loss))?;
                }
                losses.push(loss.item::<f32>()?);
            }
            Ok(losses)
        };
        let (a, b) = (run(false)?, run(true)?);
        assert_eq!(a, b);
        assert!(a[3] < a[0], "training progresses: {a:?}");
        Ok(())
    }

    #[test]
    fn sgd_in_place_matches_step() -> Result<()> {
        check(|p| Ok(Box::new(Sgd::new(p, 0.1, 0.9, 1e-4))))
    }

    #[test]
    fn adam_in_place_matches_step() -> Result<()> {
        check(|p| Ok(Box::new(Adam::new(p, AdamOptions::adamw(0.05))?)))
    }

    #[test]
    fn sgd_in_place_needs_a_first_step() -> Result<()> {
        let dev = Device::Cpu;
        let w = Param::new(Tensor::randn([4], 1, DType::F32, &dev)?)?;
        let mut opt = Sgd::new(vec![w.clone()], 0.1, 0.9, 0.0);
        let loss = w.get().mul(&w.get())?.sum(&[], false)?;
        let grads = autograd::grad(&loss, &[&w.get()])?;
        assert!(opt.step_in_place(&grads, &[]).is_err());
        Ok(())
    }
}
