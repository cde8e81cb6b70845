//! Optimisers and dynamic loss scaling.
//!
//! A step builds the update of every parameter (and its optimiser state) as
//! lazy tensors and realizes them all in one graph, together with any
//! tensors passed in `with` (the loss, batch-norm statistics), so the
//! forward, the backward and the update run as one schedule. The update of
//! each parameter is a fused elementwise expression over the parameter,
//! its gradient and its state; the scheduler emits one kernel per buffer
//! written (SGD with momentum: the velocity and the parameter; Adam: the
//! two moments and the parameter), each reading its inputs once. Values
//! that change every step (bias corrections, the loss scale) are scalar
//! tensors, not constants, so the compiled schedule is reused from step to
//! step.

mod adam;
mod scaler;
mod sgd;

pub use adam::{Adam, AdamOptions};
pub use scaler::GradScaler;
pub use sgd::Sgd;

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

    /// The leaves to take gradients with respect to, in order.
    fn leaves(&self) -> Vec<Tensor> {
        self.params().iter().map(Param::get).collect()
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

/// A rank-0 f32 leaf holding `v` on `t`'s device (a tensor, not a
/// constant, so the graph does not change from step to step).
pub(crate) fn scalar_leaf(v: f64, like: &Tensor) -> Result<Tensor> {
    Tensor::from_vec(vec![v as f32], (), like.device())?.cast(like.dtype())
}

/// Realizes `updates` and `with` in one graph.
pub(crate) fn realize_step(updates: &[Tensor], with: &[Tensor]) -> Result<()> {
    let mut all: Vec<Tensor> = updates.to_vec();
    all.extend(with.iter().cloned());
    Tensor::realize_all(&all)
}
