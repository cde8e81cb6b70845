//! Neural-network building blocks on the lazy graph: convolution, pooling
//! and losses as tensor methods ([`Conv2dOptions`], [`Tensor::conv2d`],
//! [`Tensor::max_pool2d`], [`Tensor::cross_entropy`]), parameters
//! ([`Param`]), layers ([`Linear`], [`Conv2d`], [`LayerNorm`],
//! [`BatchNorm2d`], [`Dropout`]), initialisers ([`init`]) and batch-norm
//! statistics kept in one buffer ([`PackedRunningStats`]).
//!
//! Everything is written with the core's ops, so [`crate::autograd`]
//! differentiates it and the fusion passes fuse forward and backward alike.
//!
//! [`Tensor::conv2d`]: crate::Tensor::conv2d
//! [`Tensor::max_pool2d`]: crate::Tensor::max_pool2d
//! [`Tensor::cross_entropy`]: crate::Tensor::cross_entropy

mod amp;
mod conv;
pub(crate) mod conv_native;
pub mod init;
mod layers;
mod loss;
mod param;
mod pool;
mod running_stats;

pub use amp::{autocast, autocast_dtype};
pub use conv::{Conv2dOptions, DataLayout};
pub use layers::{BatchNorm2d, Conv2d, Dropout, LayerNorm, Linear};
pub use param::Param;
pub use running_stats::PackedRunningStats;
