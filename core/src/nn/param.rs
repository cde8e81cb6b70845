//! A trainable parameter: a realized value plus the graph leaf that
//! gradients are taken with respect to.

use std::sync::{Arc, RwLock};

use crate::error::Result;
use crate::tensor::Tensor;

#[derive(Debug, Clone)]
struct Slot {
    /// The realized value.
    value: Tensor,
    /// `value.requires_grad()`: the leaf forward passes use, so gradients
    /// taken with respect to it reach every view of the parameter.
    leaf: Tensor,
}

/// A shared handle to a trainable tensor. Layers read it with
/// [`Param::get`]; an optimiser replaces its value with [`Param::set`].
/// Cloning shares the same parameter.
#[derive(Debug, Clone)]
pub struct Param(Arc<RwLock<Slot>>);

impl Param {
    /// A parameter holding `value` (realized now).
    pub fn new(value: Tensor) -> Result<Param> {
        value.realize()?;
        let leaf = value.requires_grad();
        Ok(Param(Arc::new(RwLock::new(Slot { value, leaf }))))
    }

    /// The leaf to build forward graphs with and to pass to
    /// [`crate::autograd::grad`].
    pub fn get(&self) -> Tensor {
        self.read().leaf
    }

    /// The realized value (a constant for autograd).
    pub fn value(&self) -> Tensor {
        self.read().value
    }

    /// Replaces the value (realized now unless it already is).
    pub fn set(&self, value: Tensor) -> Result<()> {
        value.realize()?;
        let leaf = value.requires_grad();
        let mut slot = match self.0.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *slot = Slot { value, leaf };
        Ok(())
    }

    /// Replaces the value with one that is already realized (no check).
    pub(crate) fn set_realized(&self, value: Tensor) {
        let leaf = value.requires_grad();
        let mut slot = match self.0.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *slot = Slot { value, leaf };
    }

    pub fn shape(&self) -> Vec<usize> {
        self.read().value.shape().to_vec()
    }

    pub fn numel(&self) -> usize {
        self.read().value.numel()
    }

    fn read(&self) -> Slot {
        match self.0.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }
}
