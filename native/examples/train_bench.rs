//! Training-step benchmark: an MLP 784-2048-2048-10 (batch 256,
//! cross-entropy, Adam) per step, f32 and under bf16 autocast, on the CPU or
//! a CUDA GPU. Warm-up 5, then `--reps` timed steps (default 100), median,
//! p10 and p90, the device synchronized before the clock stops; the first
//! step's loss is checked against the f64 reference path in the same run.
//! Writes `bench/results/train.json` (or `--out PATH`). The PyTorch side is
//! `bench/train/train_torch.py`.
//!
//! ```text
//! cargo run --release -p fusegraph --example train_bench -- --reps 5            # CPU
//! cargo run --release -p fusegraph --features cuda --example train_bench -- --cuda
//! ```

use std::time::Instant;

use fusegraph::backend::cpu::reference;
use fusegraph::nn::{self, Linear, Param};
use fusegraph::optim::{Adam, AdamOptions, Optimizer};
use fusegraph::{autograd, DType, Device, Result, Tensor};

struct Mlp {
    layers: [Linear; 3],
}

impl Mlp {
    fn new(dev: &Device) -> Result<Mlp> {
        Ok(Mlp {
            layers: [
                Linear::new(784, 2048, true, 1, dev)?,
                Linear::new(2048, 2048, true, 2, dev)?,
                Linear::new(2048, 10, true, 3, dev)?,
            ],
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.layers[0].forward(x)?.relu()?;
        let h = self.layers[1].forward(&h)?.relu()?;
        self.layers[2].forward(&h)
    }

    fn parameters(&self) -> Vec<Param> {
        self.layers.iter().flat_map(Linear::parameters).collect()
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("train_bench: {e}");
        std::process::exit(2);
    }
}

fn step(
    net: &Mlp,
    opt: &mut Adam,
    x: &Tensor,
    y: &Tensor,
    autocast: Option<DType>,
) -> Result<Tensor> {
    let logits = match autocast {
        Some(d) => nn::autocast(d, || net.forward(x))?,
        None => net.forward(x)?,
    };
    let loss = logits.cast(DType::F32)?.cross_entropy(y)?;
    let leaves = opt.leaves();
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = autograd::grad(&loss, &refs)?;
    opt.step(&grads, std::slice::from_ref(&loss))?;
    Ok(loss)
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let reps: usize = value("--reps").and_then(|v| v.parse().ok()).unwrap_or(100);
    let out = value("--out").unwrap_or_else(|| "bench/results/train.json".into());
    let dev = if args.iter().any(|a| a == "--cuda") {
        open_cuda()?
    } else {
        Device::Cpu
    };
    let batch = 256;
    let x = Tensor::randn([batch, 784], 7, DType::F32, &dev)?;
    let y = Tensor::from_vec(
        (0..batch as i32)
            .map(|i| (i * 7) % 10)
            .collect::<Vec<i32>>(),
        [batch],
        &dev,
    )?;
    x.realize()?;
    let flops = 6.0 * batch as f64 * (784.0 * 2048.0 + 2048.0 * 2048.0 + 2048.0 * 10.0);
    let mut cases = Vec::new();
    for (name, autocast) in [("mlp f32", None), ("mlp bf16 autocast", Some(DType::BF16))] {
        let net = Mlp::new(&dev)?;
        let mut opt = Adam::new(net.parameters(), AdamOptions::default())?;
        // The first loss against the reference path (before it is realized).
        let logits = match autocast {
            Some(d) => nn::autocast(d, || net.forward(&x))?,
            None => net.forward(&x)?,
        };
        let loss0 = logits.cast(DType::F32)?.cross_entropy(&y)?;
        let want = reference::evaluate(&loss0)?.iter().copied().sum::<f64>();
        let got = loss0.item::<f32>()? as f64;
        let rel = (got - want).abs() / want.abs().max(1.0);
        for _ in 0..5 {
            step(&net, &mut opt, &x, &y, autocast)?;
        }
        fusegraph::synchronize(dev)?;
        let mut times = Vec::with_capacity(reps);
        let mut last = 0.0;
        for _ in 0..reps {
            let t0 = Instant::now();
            let loss = step(&net, &mut opt, &x, &y, autocast)?;
            fusegraph::synchronize(dev)?;
            times.push(t0.elapsed().as_secs_f64() * 1e3);
            last = loss.item::<f32>()?;
        }
        times.sort_by(f64::total_cmp);
        let med = times[times.len() / 2];
        let (p10, p90) = (times[times.len() / 10], times[(9 * times.len()) / 10]);
        println!(
            "{name}: median {med:.3} ms (p10 {p10:.3}, p90 {p90:.3}), {:.2} TFLOP/s, first loss {got:.6} vs reference {want:.6} (rel {rel:.1e}), last loss {last:.4}",
            flops / (med * 1e-3) / 1e12
        );
        cases.push(format!(
            "{{\"name\": \"{name}\", \"median_ms\": {med}, \"p10_ms\": {p10}, \"p90_ms\": {p90}, \"reps\": {reps}, \"tflops\": {}, \"first_loss\": {got}, \"reference_loss\": {want}, \"last_loss\": {last}}}",
            flops / (med * 1e-3) / 1e12
        ));
    }
    let json = format!(
        "{{\n  \"device\": \"{}\",\n  \"threads\": {},\n  \"note\": \"one step = forward + backward + Adam update realized as one graph; no CUDA graph capture yet\",\n  \"cases\": [\n    {}\n  ]\n}}\n",
        dev.name(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        cases.join(",\n    ")
    );
    if let Err(e) = std::fs::write(&out, json) {
        eprintln!("train_bench: could not write {out}: {e}");
    } else {
        println!("wrote {out}");
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
        op: "train_bench",
        device: "cuda".into(),
        why: "built without the `cuda` feature".into(),
    })
}
