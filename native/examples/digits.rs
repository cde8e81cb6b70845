//! Trains a small CNN on the scikit-learn `digits` set (8x8 grey images,
//! 10 classes; `tests/data/digits.u8`, see its licence note) and reports the
//! loss per epoch and the test accuracy.
//!
//! ```text
//! cargo run --release -p fusegraph --example digits                 # CPU
//! cargo run --release -p fusegraph --features cuda --example digits -- --cuda
//! cargo run --release -p fusegraph --example digits -- --min-accuracy 0.97   # exit 1 below
//! ```
//!
//! Deterministic: a seeded shuffle and split (1437 train / 360 test), seeded
//! initialisers, full-batch order fixed per epoch.

use std::time::Instant;

use fusegraph::nn::{Conv2d, Conv2dOptions, Linear, Param};
use fusegraph::optim::{Adam, AdamOptions, Optimizer};
use fusegraph::{autograd, DType, Device, Result, Tensor};

const DATA: &[u8] = include_bytes!("../../tests/data/digits.u8");
const RECORD: usize = 65;

struct Net {
    conv1: Conv2d,
    conv2: Conv2d,
    fc1: Linear,
    fc2: Linear,
}

impl Net {
    fn new(dev: &Device) -> Result<Net> {
        let same = Conv2dOptions::default().padding(1);
        Ok(Net {
            conv1: Conv2d::new(1, 16, 3, same, true, 1, dev)?,
            conv2: Conv2d::new(16, 32, 3, same, true, 2, dev)?,
            fc1: Linear::new(32 * 4 * 4, 64, true, 3, dev)?,
            fc2: Linear::new(64, 10, true, 4, dev)?,
        })
    }

    /// `[n, 1, 8, 8]` images to `[n, 10]` logits.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.conv1.forward(x)?.relu()?;
        let h = self.conv2.forward(&h)?.relu()?;
        let h = h.max_pool2d((2, 2), Conv2dOptions::default().stride(2))?; // [n, 32, 4, 4]
        let n = h.shape()[0];
        let h = self.fc1.forward(&h.reshape([n, 32 * 4 * 4])?)?.relu()?;
        self.fc2.forward(&h)
    }

    fn parameters(&self) -> Vec<Param> {
        [
            &self.conv1.parameters()[..],
            &self.conv2.parameters(),
            &self.fc1.parameters(),
            &self.fc2.parameters(),
        ]
        .concat()
    }
}

/// The records, shuffled with a fixed seed.
fn load() -> Vec<(Vec<f32>, i32)> {
    let mut recs: Vec<(Vec<f32>, i32)> = DATA
        .chunks_exact(RECORD)
        .map(|r| {
            (
                r[..64].iter().map(|&v| v as f32 / 16.0).collect(),
                r[64] as i32,
            )
        })
        .collect();
    let mut s: u64 = 0x005E_EDD1_6175;
    for i in (1..recs.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        recs.swap(i, (s % (i as u64 + 1)) as usize);
    }
    recs
}

fn batch(recs: &[(Vec<f32>, i32)], dev: &Device) -> Result<(Tensor, Tensor)> {
    let x: Vec<f32> = recs.iter().flat_map(|r| r.0.iter().copied()).collect();
    let y: Vec<i32> = recs.iter().map(|r| r.1).collect();
    Ok((
        Tensor::from_vec(x, [recs.len(), 1, 8, 8], dev)?,
        Tensor::from_vec(y, [recs.len()], dev)?,
    ))
}

fn accuracy(net: &Net, recs: &[(Vec<f32>, i32)], dev: &Device) -> Result<f64> {
    let (x, y) = batch(recs, dev)?;
    let pred = net.forward(&x)?.argmax(Some(-1), false)?;
    let right = pred
        .eq(&y)?
        .cast(DType::I32)?
        .sum(&[], false)?
        .item::<i32>()?;
    Ok(right as f64 / recs.len() as f64)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("digits: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name);
    let epochs: usize = flag("--epochs")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(8);
    let min_acc: Option<f64> = flag("--min-accuracy").and_then(|i| args.get(i + 1)?.parse().ok());
    let dev = if flag("--cuda").is_some() {
        open_cuda()?
    } else {
        Device::Cpu
    };

    let recs = load();
    let (train, test) = recs.split_at(1437);
    let net = Net::new(&dev)?;
    let mut opt = Adam::new(
        net.parameters(),
        AdamOptions {
            lr: 2e-3,
            ..Default::default()
        },
    )?;
    let batch_size = 64;
    let start = Instant::now();
    for epoch in 0..epochs {
        let (mut total, mut steps) = (0.0, 0);
        for chunk in train.chunks(batch_size) {
            let (x, y) = batch(chunk, &dev)?;
            let loss = net.forward(&x)?.cross_entropy(&y)?;
            let leaves = opt.leaves();
            let refs: Vec<&Tensor> = leaves.iter().collect();
            let grads = autograd::grad(&loss, &refs)?;
            // Forward, backward and update in one graph.
            opt.step(&grads, std::slice::from_ref(&loss))?;
            total += loss.item::<f32>()? as f64;
            steps += 1;
        }
        println!(
            "epoch {:>2}  loss {:.4}  ({:.1} s)",
            epoch + 1,
            total / steps as f64,
            start.elapsed().as_secs_f64()
        );
    }
    let train_time = start.elapsed().as_secs_f64();
    let acc = accuracy(&net, test, &dev)?;
    let train_acc = accuracy(&net, train, &dev)?;
    println!(
        "test accuracy {:.2}% ({} images), train accuracy {:.2}%, training {:.1} s on {}",
        100.0 * acc,
        test.len(),
        100.0 * train_acc,
        train_time,
        dev.name()
    );
    if let Some(min) = min_acc {
        if acc < min {
            eprintln!(
                "digits: test accuracy {:.2}% is below {:.2}%",
                100.0 * acc,
                100.0 * min
            );
            std::process::exit(1);
        }
    }
    Ok(())
}

#[cfg(feature = "cuda")]
fn open_cuda() -> Result<Device> {
    use fusegraph::CudaDevice;
    Device::cuda(0)
}

#[cfg(not(feature = "cuda"))]
fn open_cuda() -> Result<Device> {
    Err(fusegraph::Error::DeviceUnavailable {
        op: "digits",
        device: "cuda".into(),
        why: "built without the `cuda` feature".into(),
    })
}
