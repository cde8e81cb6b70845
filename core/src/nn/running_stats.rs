//! The running statistics of several batch norms in one buffer. A training
//! step kept in place (recorded once as a CUDA graph and replayed) must
//! write each layer's new running mean and variance where the next step
//! reads them; copied back one tensor at a time that is two copies per
//! layer (40 for ResNet-18), each a node of the recorded graph. Packed,
//! the new statistics are laid end to end by one concat in the step's own
//! graph and copied back with one copy.
//!
//! ```no_run
//! # use fusegraph_core::{nn::{BatchNorm2d, DataLayout, PackedRunningStats}, Device, Result, Tensor};
//! # fn main() -> Result<()> {
//! # let dev = Device::Cpu;
//! let bns = [BatchNorm2d::new(8, DataLayout::Nhwc, &dev)?, BatchNorm2d::new(8, DataLayout::Nhwc, &dev)?];
//! let layers: Vec<&BatchNorm2d> = bns.iter().collect();
//! let packed = PackedRunningStats::new(&layers)?;
//! // ... a training forward through the layers, then:
//! let stats = packed.gather(&layers)?; // realize with the step (the optimiser's `with`)
//! # stats.realize()?;
//! packed.keep(&layers, &stats)?; // one copy back; the layers read the buffer again
//! # Ok(())
//! # }
//! ```

use crate::error::{Error, Result};
use crate::nn::BatchNorm2d;
use crate::tensor::Tensor;

/// One buffer holding every layer's running mean then running variance,
/// layer after layer; each layer's statistics are views of it.
#[derive(Debug, Clone)]
pub struct PackedRunningStats {
    flat: Tensor,
    /// Channels of each layer, in order.
    channels: Vec<usize>,
}

impl PackedRunningStats {
    /// Packs the current (realized) statistics of `layers` into one new
    /// buffer and points each layer at its views of it.
    pub fn new(layers: &[&BatchNorm2d]) -> Result<PackedRunningStats> {
        if layers.is_empty() {
            return Err(Error::NoInputs {
                op: "PackedRunningStats::new",
            });
        }
        // The concat's output is a new buffer of its own.
        let flat = end_to_end(layers)?.to_owned_buffer()?;
        let packed = PackedRunningStats {
            flat,
            channels: channels_of(layers),
        };
        packed.point(layers)?;
        Ok(packed)
    }

    /// The layers' current statistics laid end to end, lazy: after a
    /// training forward, the new ones, to realize with the step.
    pub fn gather(&self, layers: &[&BatchNorm2d]) -> Result<Tensor> {
        self.check(layers)?;
        end_to_end(layers)
    }

    /// Copies `gathered` (from [`PackedRunningStats::gather`]) into the
    /// buffer and points the layers at their views of it again.
    pub fn keep(&self, layers: &[&BatchNorm2d], gathered: &Tensor) -> Result<()> {
        self.check(layers)?;
        self.flat.assign(gathered)?;
        self.point(layers)
    }

    /// The buffer (for checks, and to save or restore the statistics).
    pub fn buffer(&self) -> &Tensor {
        &self.flat
    }

    fn point(&self, layers: &[&BatchNorm2d]) -> Result<()> {
        let mut at = 0;
        for (l, &c) in layers.iter().zip(&self.channels) {
            let mean = self.flat.narrow(0, at, c)?;
            let var = self.flat.narrow(0, at + c, c)?;
            l.set_running_stats((mean, var))?;
            at += 2 * c;
        }
        Ok(())
    }

    fn check(&self, layers: &[&BatchNorm2d]) -> Result<()> {
        let channels = channels_of(layers);
        if channels == self.channels {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            op: "PackedRunningStats",
            what: "layers",
            expected: "the layers it was made from, in order",
            got: format!("channels {channels:?} for {:?}", self.channels),
        })
    }
}

/// Channels of each layer, in order.
fn channels_of(layers: &[&BatchNorm2d]) -> Vec<usize> {
    layers.iter().map(|l| l.running_stats().0.numel()).collect()
}

/// Every layer's running mean and variance, end to end (lazy).
fn end_to_end(layers: &[&BatchNorm2d]) -> Result<Tensor> {
    let parts: Vec<Tensor> = layers
        .iter()
        .flat_map(|l| {
            let (m, v) = l.running_stats();
            [m, v]
        })
        .collect();
    let refs: Vec<&Tensor> = parts.iter().collect();
    Tensor::concat(&refs, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::DataLayout;
    use crate::{DType, Device};

    /// Two steps kept in place through the packed buffer give the same
    /// statistics as two ordinary ones, and the layers end up reading the
    /// one buffer.
    #[test]
    fn packed_statistics_match_separate_ones() -> Result<()> {
        let dev = Device::Cpu;
        let make = || -> Result<Vec<BatchNorm2d>> {
            Ok(vec![
                BatchNorm2d::new(3, DataLayout::Nhwc, &dev)?,
                BatchNorm2d::new(5, DataLayout::Nhwc, &dev)?,
            ])
        };
        let xs = [
            Tensor::randn([2, 4, 4, 3], 1, DType::F32, &dev)?,
            Tensor::randn([2, 4, 4, 5], 2, DType::F32, &dev)?,
        ];
        let (plain, packed_bns) = (make()?, make()?);
        let layers: Vec<&BatchNorm2d> = packed_bns.iter().collect();
        let packed = PackedRunningStats::new(&layers)?;
        for _ in 0..2 {
            for (l, x) in plain.iter().zip(&xs) {
                l.forward(x, true)?;
                let (m, v) = l.running_stats();
                Tensor::realize_all(&[m.clone(), v.clone()])?;
            }
            for (l, x) in packed_bns.iter().zip(&xs) {
                l.forward(x, true)?;
            }
            let stats = packed.gather(&layers)?;
            stats.realize()?;
            packed.keep(&layers, &stats)?;
        }
        for (a, b) in plain.iter().zip(&packed_bns) {
            let (am, av) = a.running_stats();
            let (bm, bv) = b.running_stats();
            assert_eq!(am.to_vec::<f32>()?, bm.to_vec::<f32>()?);
            assert_eq!(av.to_vec::<f32>()?, bv.to_vec::<f32>()?);
            assert!(bm.shares_storage(packed.buffer()));
        }
        assert!(packed.gather(&layers[..1]).is_err(), "other layers");
        assert!(PackedRunningStats::new(&[]).is_err(), "no layers");
        Ok(())
    }
}
