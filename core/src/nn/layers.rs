//! Layers: small structs holding [`Param`]s, with a `forward` that records
//! graph ops and a `parameters` list for the optimisers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use super::amp::autocast_dtype;
use super::conv::{Conv2dOptions, DataLayout};
use super::init;
use super::param::Param;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

pub(crate) fn expect_rank(op: &'static str, x: &Tensor, rank: usize) -> Result<()> {
    if x.rank() != rank {
        return Err(Error::InvalidArgument {
            op,
            what: "input",
            expected: if rank == 4 {
                "rank 4"
            } else {
                "the layer's rank"
            },
            got: format!("shape {:?}", x.shape()),
        });
    }
    Ok(())
}

/// `x` and `w` in the autocast dtype when a scope is open.
fn cast_pair(x: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor)> {
    match autocast_dtype() {
        Some(d) if x.dtype().is_float() => Ok((x.cast(d)?, w.cast(d)?)),
        _ => Ok((x.clone(), w.clone())),
    }
}

/// `y = x @ weightᵀ + bias` with `weight: [out, in]` (PyTorch's layout).
#[derive(Debug, Clone)]
pub struct Linear {
    pub weight: Param,
    pub bias: Option<Param>,
}

impl Linear {
    /// Kaiming-uniform weights, zero bias, seeded.
    pub fn new(
        inputs: usize,
        outputs: usize,
        bias: bool,
        seed: u64,
        dev: &Device,
    ) -> Result<Linear> {
        let weight = Param::new(init::kaiming_uniform(
            &[outputs, inputs],
            inputs,
            seed,
            DType::F32,
            dev,
        )?)?;
        let bias = if bias {
            Some(Param::new(Tensor::zeros([outputs], DType::F32, dev)?)?)
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (x, w) = cast_pair(x, &self.weight.get())?;
        let y = x.matmul(&w.t()?)?;
        match &self.bias {
            Some(b) => y.add(&b.get().cast(y.dtype())?),
            None => Ok(y),
        }
    }

    pub fn parameters(&self) -> Vec<Param> {
        std::iter::once(self.weight.clone())
            .chain(self.bias.clone())
            .collect()
    }
}

/// 2-D convolution with `weight: [out, in, kh, kw]` (see [`Tensor::conv2d`]).
#[derive(Debug, Clone)]
pub struct Conv2d {
    pub weight: Param,
    pub bias: Option<Param>,
    pub options: Conv2dOptions,
}

impl Conv2d {
    /// Kaiming-uniform weights, zero bias, seeded.
    pub fn new(
        inputs: usize,
        outputs: usize,
        kernel: usize,
        options: Conv2dOptions,
        bias: bool,
        seed: u64,
        dev: &Device,
    ) -> Result<Conv2d> {
        let fan_in = inputs * kernel * kernel;
        let weight = Param::new(init::kaiming_uniform(
            &[outputs, inputs, kernel, kernel],
            fan_in,
            seed,
            DType::F32,
            dev,
        )?)?;
        let bias = if bias {
            Some(Param::new(Tensor::zeros([outputs], DType::F32, dev)?)?)
        } else {
            None
        };
        Ok(Conv2d {
            weight,
            bias,
            options,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (x, w) = cast_pair(x, &self.weight.get())?;
        let b = match &self.bias {
            Some(b) => Some(b.get().cast(x.dtype())?),
            None => None,
        };
        x.conv2d(&w, b.as_ref(), self.options)
    }

    pub fn parameters(&self) -> Vec<Param> {
        std::iter::once(self.weight.clone())
            .chain(self.bias.clone())
            .collect()
    }
}

/// Layer norm over the last axis with a learned scale and shift.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    pub weight: Param,
    pub bias: Param,
    pub eps: f64,
}

impl LayerNorm {
    pub fn new(features: usize, eps: f64, dev: &Device) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: Param::new(Tensor::ones([features], DType::F32, dev)?)?,
            bias: Param::new(Tensor::zeros([features], DType::F32, dev)?)?,
            eps,
        })
    }

    /// Computes in f32 at least (an f16/bf16 input is cast up).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = x.cast(DType::promote(x.dtype(), DType::F32))?;
        x.layer_norm(
            1,
            Some(&self.weight.get()),
            Some(&self.bias.get()),
            self.eps,
        )
    }

    pub fn parameters(&self) -> Vec<Param> {
        vec![self.weight.clone(), self.bias.clone()]
    }
}

/// Batch norm over the channel axis of a 4-D activation, as PyTorch's
/// `BatchNorm2d`: batch statistics in training (the running mean and the
/// unbiased running variance move by `momentum`), running statistics in
/// evaluation.
#[derive(Debug)]
pub struct BatchNorm2d {
    pub weight: Param,
    pub bias: Param,
    pub eps: f64,
    pub momentum: f64,
    pub layout: DataLayout,
    running: RwLock<(Tensor, Tensor)>,
}

impl BatchNorm2d {
    pub fn new(channels: usize, layout: DataLayout, dev: &Device) -> Result<BatchNorm2d> {
        let mean = Tensor::zeros([channels], DType::F32, dev)?;
        let var = Tensor::ones([channels], DType::F32, dev)?;
        Tensor::realize_all(&[mean.clone(), var.clone()])?;
        Ok(BatchNorm2d {
            weight: Param::new(Tensor::ones([channels], DType::F32, dev)?)?,
            bias: Param::new(Tensor::zeros([channels], DType::F32, dev)?)?,
            eps: 1e-5,
            momentum: 0.1,
            layout,
            running: RwLock::new((mean, var)),
        })
    }

    /// In training the new running statistics are recorded lazily; realize
    /// [`BatchNorm2d::running_stats`] with the step (the optimisers' `step`
    /// takes extra tensors to realize in the same graph).
    ///
    /// Statistics and normalisation compute in f32 (or f64); a half
    /// precision input (as under [`super::autocast`]) gets its output in
    /// its own dtype, as PyTorch's batch norm does, so the activations
    /// between layers stay half the size.
    pub fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        expect_rank("batch_norm", x, 4)?;
        let in_dtype = x.dtype();
        let y = self.normalise(&x.cast(DType::promote(in_dtype, DType::F32))?, train)?;
        if matches!(in_dtype, DType::F16 | DType::BF16) {
            return y.cast(in_dtype);
        }
        Ok(y)
    }

    fn normalise(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        let (axes, channel_shape): (Vec<isize>, Vec<usize>) = match self.layout {
            DataLayout::Nchw => (vec![0, 2, 3], vec![1, x.shape()[1], 1, 1]),
            DataLayout::Nhwc => (vec![0, 1, 2], vec![x.shape()[3]]),
        };
        let per_channel = |t: &Tensor| t.reshape(channel_shape.clone());
        let (mean, var) = if train {
            let mean = x.mean(&axes, true)?;
            // The variance's own dependence on the mean has a zero
            // gradient (Σ (x - μ) = 0), so it is left out of the graph:
            // the backward then needs no sum of x - μ.
            let centered = x.sub(&mean.detach()?)?;
            let var = centered.mul(&centered)?.mean(&axes, true)?;
            let n: usize = axes.iter().map(|&a| x.shape()[a as usize]).product();
            let unbiased = var.mul_scalar(n as f64 / (n.max(2) - 1) as f64)?;
            let mut guard = match self.running.write() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            let m = self.momentum;
            let flat = |t: &Tensor| t.reshape([t.numel()]);
            let new_mean = guard
                .0
                .mul_scalar(1.0 - m)?
                .add(&flat(&mean)?.mul_scalar(m)?)?;
            let new_var = guard
                .1
                .mul_scalar(1.0 - m)?
                .add(&flat(&unbiased)?.mul_scalar(m)?)?;
            *guard = (new_mean, new_var);
            (mean, var)
        } else {
            let guard = match self.running.read() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            (per_channel(&guard.0)?, per_channel(&guard.1)?)
        };
        let y = x.sub(&mean)?.mul(&var.add_scalar(self.eps)?.rsqrt()?)?;
        y.mul(&per_channel(&self.weight.get())?)?
            .add(&per_channel(&self.bias.get())?)
    }

    /// The running mean and variance (lazy after a training forward).
    pub fn running_stats(&self) -> (Tensor, Tensor) {
        match self.running.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Replaces the running mean and variance (shape `[channels]` each),
    /// e.g. with tensors taken from [`BatchNorm2d::running_stats`] before a
    /// step after copying the step's values into them
    /// ([`Tensor::assign`]), so a step recorded as a CUDA graph keeps
    /// updating the same buffers.
    pub fn set_running_stats(&self, (mean, var): (Tensor, Tensor)) -> Result<()> {
        let (m0, v0) = self.running_stats();
        if mean.shape() != m0.shape() || var.shape() != v0.shape() {
            return Err(Error::InvalidArgument {
                op: "batch_norm",
                what: "running statistics",
                expected: "a mean and a variance of shape [channels]",
                got: format!(
                    "{:?} and {:?} for {:?}",
                    mean.shape(),
                    var.shape(),
                    m0.shape()
                ),
            });
        }
        let mut guard = match self.running.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *guard = (mean, var);
        Ok(())
    }

    pub fn parameters(&self) -> Vec<Param> {
        vec![self.weight.clone(), self.bias.clone()]
    }
}

/// Inverted dropout: in training, zeroes each element with probability `p`
/// and scales the rest by `1/(1-p)`; a new seeded mask on every call.
#[derive(Debug)]
pub struct Dropout {
    pub p: f64,
    seed: AtomicU64,
}

impl Dropout {
    pub fn new(p: f64, seed: u64) -> Result<Dropout> {
        if !(0.0..1.0).contains(&p) {
            return Err(Error::InvalidArgument {
                op: "dropout",
                what: "p",
                expected: "0 <= p < 1",
                got: format!("{p}"),
            });
        }
        Ok(Dropout {
            p,
            seed: AtomicU64::new(seed),
        })
    }

    pub fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        if !train || self.p == 0.0 {
            return Ok(x.clone());
        }
        let seed = self.seed.fetch_add(1, Ordering::Relaxed);
        let keep =
            Tensor::rand(x.shape().to_vec(), seed, DType::F32, x.device())?.ge_scalar(self.p)?;
        let zero = Tensor::scalar(0.0, x.dtype(), x.device())?;
        Tensor::where_cond(&keep, &x.mul_scalar(1.0 / (1.0 - self.p))?, &zero)
    }
}
