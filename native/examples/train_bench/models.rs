//! The benchmarked networks: an MLP 784-2048-2048-10 and ResNet-18 with
//! the CIFAR stem (as `bench/train/train_torch.py` builds them), channels
//! last (NHWC): the convolutions gather NHWC patches, so an NCHW
//! activation would be permuted before every convolution.

use fusegraph::nn::{BatchNorm2d, Conv2d, Conv2dOptions, DataLayout, Linear, Param};
use fusegraph::{Device, Result, Tensor};

/// What the benchmark trains.
pub trait Model {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
    fn parameters(&self) -> Vec<Param>;
    /// The batch-norm layers, whose running statistics a step updates.
    fn batch_norms(&self) -> Vec<&BatchNorm2d>;
    /// FLOPs of one training step (forward, and backward at twice that).
    fn step_flops(&self, batch: usize) -> f64;
}

pub struct Mlp {
    layers: [Linear; 3],
}

impl Mlp {
    pub fn new(dev: &Device) -> Result<Mlp> {
        Ok(Mlp {
            layers: [
                Linear::new(784, 2048, true, 1, dev)?,
                Linear::new(2048, 2048, true, 2, dev)?,
                Linear::new(2048, 10, true, 3, dev)?,
            ],
        })
    }
}

impl Model for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.layers[0].forward(x)?.relu()?;
        let h = self.layers[1].forward(&h)?.relu()?;
        self.layers[2].forward(&h)
    }

    fn parameters(&self) -> Vec<Param> {
        self.layers.iter().flat_map(Linear::parameters).collect()
    }

    fn batch_norms(&self) -> Vec<&BatchNorm2d> {
        Vec::new()
    }

    fn step_flops(&self, batch: usize) -> f64 {
        6.0 * batch as f64 * (784.0 * 2048.0 + 2048.0 * 2048.0 + 2048.0 * 10.0)
    }
}

/// Convolution (no bias) then batch norm, channels last.
struct ConvBn {
    conv: Conv2d,
    bn: BatchNorm2d,
    /// (input channels, output channels, kernel, stride)
    shape: (usize, usize, usize, usize),
}

impl ConvBn {
    fn new(
        cin: usize,
        cout: usize,
        k: usize,
        stride: usize,
        seed: u64,
        dev: &Device,
    ) -> Result<ConvBn> {
        let opts = Conv2dOptions::default()
            .stride(stride)
            .padding(k / 2)
            .layout(DataLayout::Nhwc);
        Ok(ConvBn {
            conv: Conv2d::new(cin, cout, k, opts, false, seed, dev)?,
            bn: BatchNorm2d::new(cout, DataLayout::Nhwc, dev)?,
            shape: (cin, cout, k, stride),
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.bn.forward(&self.conv.forward(x)?, true)
    }

    /// Forward FLOPs on a `side`×`side` input, and the output side.
    fn flops(&self, batch: usize, side: usize) -> (f64, usize) {
        let (cin, cout, k, s) = self.shape;
        let out = side / s;
        let f = 2.0 * (batch * out * out * cout * cin * k * k) as f64;
        (f, out)
    }

    fn parameters(&self) -> Vec<Param> {
        [self.conv.parameters(), self.bn.parameters()].concat()
    }
}

struct Block {
    c1: ConvBn,
    c2: ConvBn,
    short: Option<ConvBn>,
}

impl Block {
    fn new(cin: usize, cout: usize, stride: usize, seed: u64, dev: &Device) -> Result<Block> {
        let short = if stride != 1 || cin != cout {
            Some(ConvBn::new(cin, cout, 1, stride, seed + 2, dev)?)
        } else {
            None
        };
        Ok(Block {
            c1: ConvBn::new(cin, cout, 3, stride, seed, dev)?,
            c2: ConvBn::new(cout, cout, 3, 1, seed + 1, dev)?,
            short,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = self.c2.forward(&self.c1.forward(x)?.relu()?)?;
        let s = match &self.short {
            Some(s) => s.forward(x)?,
            None => x.clone(),
        };
        y.add(&s.cast(y.dtype())?)?.relu()
    }

    fn convs(&self) -> Vec<&ConvBn> {
        [&self.c1, &self.c2]
            .into_iter()
            .chain(&self.short)
            .collect()
    }
}

/// ResNet-18, CIFAR stem (3x3 convolution, no max pool), 10 classes.
pub struct ResNet18 {
    stem: ConvBn,
    blocks: Vec<Block>,
    fc: Linear,
}

impl ResNet18 {
    pub fn new(dev: &Device) -> Result<ResNet18> {
        let mut blocks = Vec::new();
        let mut cin = 64;
        let mut seed = 10;
        for (cout, stride) in [(64, 1), (128, 2), (256, 2), (512, 2)] {
            blocks.push(Block::new(cin, cout, stride, seed, dev)?);
            blocks.push(Block::new(cout, cout, 1, seed + 3, dev)?);
            cin = cout;
            seed += 6;
        }
        Ok(ResNet18 {
            stem: ConvBn::new(3, 64, 3, 1, 1, dev)?,
            blocks,
            fc: Linear::new(512, 10, true, 2, dev)?,
        })
    }

    fn convs(&self) -> Vec<&ConvBn> {
        std::iter::once(&self.stem)
            .chain(self.blocks.iter().flat_map(Block::convs))
            .collect()
    }
}

impl Model for ResNet18 {
    /// `x`: `[N, 32, 32, 3]` images to `[N, 10]` logits.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = self.stem.forward(x)?.relu()?;
        for b in &self.blocks {
            h = b.forward(&h)?;
        }
        self.fc.forward(&h.mean(&[1, 2], false)?)
    }

    fn parameters(&self) -> Vec<Param> {
        let convs = self.convs().into_iter().flat_map(ConvBn::parameters);
        convs.chain(self.fc.parameters()).collect()
    }

    fn batch_norms(&self) -> Vec<&BatchNorm2d> {
        self.convs().into_iter().map(|c| &c.bn).collect()
    }

    fn step_flops(&self, batch: usize) -> f64 {
        // Convolutions (each block's shortcut reads the block's input side)
        // and the classifier; elementwise work is left out, as usual.
        let (mut total, mut side) = self.stem.flops(batch, 32);
        for b in &self.blocks {
            let (f1, s1) = b.c1.flops(batch, side);
            let (f2, _) = b.c2.flops(batch, s1);
            let f3 = b.short.as_ref().map_or(0.0, |s| s.flops(batch, side).0);
            total += f1 + f2 + f3;
            side = s1;
        }
        3.0 * (total + 2.0 * (batch * 512 * 10) as f64)
    }
}
