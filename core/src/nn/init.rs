//! Seeded initialisers (the same numbers on every backend: they come from
//! the counter-based generator of [`Tensor::rand`]).

use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Uniform in `[-bound, bound)`.
pub fn uniform(
    shape: &[usize],
    bound: f64,
    seed: u64,
    dtype: DType,
    dev: &Device,
) -> Result<Tensor> {
    Tensor::rand(shape.to_vec(), seed, dtype, dev)?
        .mul_scalar(2.0 * bound)?
        .sub_scalar(bound)
}

/// He/Kaiming uniform for ReLU networks: bound `sqrt(6 / fan_in)`.
pub fn kaiming_uniform(
    shape: &[usize],
    fan_in: usize,
    seed: u64,
    dtype: DType,
    dev: &Device,
) -> Result<Tensor> {
    uniform(shape, (6.0 / fan_in.max(1) as f64).sqrt(), seed, dtype, dev)
}

/// Glorot/Xavier uniform: bound `sqrt(6 / (fan_in + fan_out))`.
pub fn xavier_uniform(
    shape: &[usize],
    fan_in: usize,
    fan_out: usize,
    seed: u64,
    dtype: DType,
    dev: &Device,
) -> Result<Tensor> {
    uniform(
        shape,
        (6.0 / (fan_in + fan_out).max(1) as f64).sqrt(),
        seed,
        dtype,
        dev,
    )
}
