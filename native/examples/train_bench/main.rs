//! Training-step benchmark on the CPU or a CUDA GPU:
//!
//! - MLP 784-2048-2048-10, batch 256, cross-entropy, Adam;
//! - ResNet-18 (CIFAR stem: 3x3 convolution, no max pool; channels last),
//!   batch 256 of random 3x32x32 images, SGD (momentum 0.9, lr 0.1).
//!
//! Each in f32 eager, bf16 autocast eager, and (on CUDA) bf16 autocast with
//! the step recorded once as a CUDA graph and replayed (the step keeps its
//! state in place: `Optimizer::step_in_place`, the batch-norm statistics
//! through one `PackedRunningStats` buffer, or with `--separate-bn-copies`
//! one `Tensor::assign` per tensor). Eager
//! steps build, compile (cached) and launch the graph each time. Warm-up 5,
//! then `--reps` timed steps (MLP, default 100) or `--resnet-reps` (default
//! 30), median, p10 and p90, the device synchronized before the clock
//! stops. Checks in the same run: the first loss of every case against the
//! f64 reference path (on a slice of the batch, as the oracle is slow: 16
//! MLP rows, 2 ResNet-18 images), and every timed step's loss is finite.
//! `--only TEXT` runs the cases whose name contains TEXT. Writes JSON to `--out`
//! (default `bench/results/train_fusegraph.json`); `bench/train/merge.py`
//! joins it with `bench/train/train_torch.py`'s figures.
//!
//! ```text
//! cargo run --release -p fusegraph --example train_bench -- --reps 3 --resnet-batch 4 --resnet-reps 1
//! cargo run --release -p fusegraph --features cuda --example train_bench -- --cuda
//! cargo run --release -p fusegraph --example train_bench -- --plan   # CUDA kernels of the ResNet-18 step, no GPU
//! FUSEGRAPH_NATIVE_CONV=1 cargo run --release -p fusegraph --example train_bench -- --plan --plan-args
//! ```
//!
//! `--plan` lists the kernels with im2col convolutions; with
//! `FUSEGRAPH_NATIVE_CONV=1` it lists them with one conv node per pass, as
//! cuDNN runs them (the default on a GPU with cuDNN; `FUSEGRAPH_CUDNN=0`
//! runs im2col there too). `--plan-args` adds the buffers each large
//! kernel reads.

mod models;
mod plan;

use std::time::Instant;

use fusegraph::backend::cpu::reference;
use fusegraph::nn::{self, PackedRunningStats};
use fusegraph::optim::{Adam, AdamOptions, Optimizer, Sgd};
use fusegraph::{autograd, DType, Device, Error, Result, Tensor};
use models::{Mlp, Model, ResNet18};

fn main() {
    let r = run();
    // With FUSEGRAPH_PROFILE=1: the per-kernel table of every step run.
    fusegraph::profile::report_env();
    if let Err(e) = r {
        eprintln!("train_bench: {e}");
        std::process::exit(2);
    }
}

/// `--separate-bn-copies`: in a recorded step, copy each batch norm's
/// statistics back on its own instead of through one packed buffer
/// (`PackedRunningStats`), to compare the two.
fn separate_bn_copies() -> bool {
    std::env::args().any(|a| a == "--separate-bn-copies")
}

/// How a case runs its steps.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Eager,
    /// Recorded once as a CUDA graph, then replayed.
    Graph,
}

/// One training step. `in_place` keeps parameters, optimiser state and
/// batch-norm statistics in their buffers (what a replayed graph needs);
/// with `packed` the statistics go back with one copy instead of two per
/// layer.
fn step(
    net: &dyn Model,
    opt: &mut dyn Optimizer,
    x: &Tensor,
    y: &Tensor,
    autocast: Option<DType>,
    in_place: Option<Option<&PackedRunningStats>>,
) -> Result<Tensor> {
    let bns = net.batch_norms();
    let before: Vec<(Tensor, Tensor)> = bns.iter().map(|b| b.running_stats()).collect();
    let logits = match autocast {
        Some(d) => nn::autocast(d, || net.forward(x))?,
        None => net.forward(x)?,
    };
    let loss = logits.cast(DType::F32)?.cross_entropy(y)?;
    let leaves = opt.leaves();
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = autograd::grad(&loss, &refs)?;
    let mut with = vec![loss.clone()];
    let Some(packed) = in_place else {
        with.extend(bns.iter().flat_map(|b| {
            let (m, v) = b.running_stats();
            [m, v]
        }));
        opt.step(&grads, &with)?;
        return Ok(loss);
    };
    if let Some(packed) = packed {
        let stats = packed.gather(&bns)?;
        with.push(stats.clone());
        opt.step_in_place(&grads, &with)?;
        packed.keep(&bns, &stats)?;
        return Ok(loss);
    }
    let after: Vec<(Tensor, Tensor)> = bns.iter().map(|b| b.running_stats()).collect();
    with.extend(after.iter().flat_map(|(m, v)| [m.clone(), v.clone()]));
    opt.step_in_place(&grads, &with)?;
    for ((bn, old), new) in bns.iter().zip(before).zip(&after) {
        old.0.assign(&new.0)?;
        old.1.assign(&new.1)?;
        bn.set_running_stats(old)?;
    }
    Ok(loss)
}

/// Builds a network on a device.
type Builder = fn(&Device) -> Result<Box<dyn Model>>;

struct Case<'a> {
    name: String,
    net: &'a dyn Model,
    opt: Box<dyn Optimizer + 'a>,
    autocast: Option<DType>,
    mode: Mode,
    reps: usize,
    /// Rows the first-loss check evaluates.
    check_batch: usize,
    /// Builds the same network on the CPU: the check then compares with
    /// the CPU backend (same parameters) instead of the f64 reference,
    /// whose ResNet-18 forward takes minutes even for one image.
    cpu_twin: Option<Builder>,
}

/// The first loss on `n` rows of `x`: (ours, the check's, its name).
fn check_first_loss(c: &Case, x: &Tensor, y: &Tensor) -> Result<(f64, f64, &'static str)> {
    let n = c.check_batch;
    let (xs, ys) = (x.narrow(0, 0, n)?, y.narrow(0, 0, n)?);
    let loss_of = |net: &dyn Model, xs: &Tensor, ys: &Tensor| {
        let logits = match c.autocast {
            Some(d) => nn::autocast(d, || net.forward(xs))?,
            None => net.forward(xs)?,
        };
        logits.cast(DType::F32)?.cross_entropy(ys)
    };
    let loss = loss_of(c.net, &xs, &ys)?;
    let got = loss.item::<f32>()? as f64;
    let Some(twin) = c.cpu_twin else {
        let want = reference::evaluate(&loss)?.iter().copied().sum::<f64>();
        return Ok((got, want, "f64 reference"));
    };
    let cpu = Device::Cpu;
    let net = twin(&cpu)?;
    for (a, b) in net.parameters().iter().zip(c.net.parameters()) {
        a.set(Tensor::from_vec(
            b.value().to_vec::<f32>()?,
            b.shape(),
            &cpu,
        )?)?;
    }
    let to_cpu_f32 = |t: &Tensor| Tensor::from_vec(t.to_vec::<f32>()?, t.shape(), &cpu);
    let ys = Tensor::from_vec(ys.to_vec::<i32>()?, ys.shape(), &cpu)?;
    let want = loss_of(net.as_ref(), &to_cpu_f32(&xs)?, &ys)?.item::<f32>()? as f64;
    Ok((got, want, "cpu backend"))
}

fn time_case(c: Case, x: &Tensor, y: &Tensor, dev: Device) -> Result<String> {
    let (got, want, checked_by) = check_first_loss(&c, x, y)?;
    let rel = (got - want).abs() / want.abs().max(1e-6);
    let Case {
        name,
        net,
        mut opt,
        autocast,
        mode,
        reps,
        check_batch,
        ..
    } = c;
    let batch = x.shape()[0];
    let compile = Instant::now();
    let first = step(net, opt.as_mut(), x, y, autocast, None)?;
    let first = first.item::<f32>()?;
    let first_step_s = compile.elapsed().as_secs_f64();
    // A step that replays: recorded once (which runs it), then launched.
    let mut run: Box<dyn FnMut() -> Result<Tensor> + '_> = match mode {
        Mode::Eager => Box::new(|| step(net, opt.as_mut(), x, y, autocast, None)),
        Mode::Graph => {
            let bns = net.batch_norms();
            let packed = match bns.is_empty() || separate_bn_copies() {
                true => None,
                false => Some(PackedRunningStats::new(&bns)?),
            };
            let in_place = Some(packed.as_ref());
            let graph = capture(dev, || step(net, opt.as_mut(), x, y, autocast, in_place))?;
            Box::new(move || {
                graph.replay()?;
                Ok(graph.value().clone())
            })
        }
    };
    for _ in 0..5 {
        run()?;
    }
    fusegraph::synchronize(dev)?;
    let mut times = Vec::with_capacity(reps);
    let mut last = f32::NAN;
    for _ in 0..reps {
        let t0 = Instant::now();
        let loss = run()?;
        fusegraph::synchronize(dev)?;
        times.push(t0.elapsed().as_secs_f64() * 1e3);
        last = loss.item::<f32>()?;
        if !last.is_finite() {
            return Err(Error::Backend {
                op: "train_bench",
                message: format!("{name}: loss {last} is not finite"),
            });
        }
    }
    times.sort_by(f64::total_cmp);
    let med = times[times.len() / 2];
    let (p10, p90) = (times[times.len() / 10], times[(9 * times.len()) / 10]);
    let tflops = net.step_flops(batch) / (med * 1e-3) / 1e12;
    println!(
        "{name}: median {med:.3} ms (p10 {p10:.3}, p90 {p90:.3}), {tflops:.2} TFLOP/s; \
         first loss ({check_batch} rows) {got:.6} vs {checked_by} {want:.6} (rel {rel:.1e}); \
         loss {first:.4} -> {last:.4}; first step {first_step_s:.1} s"
    );
    Ok(format!(
        "{{\"name\": \"{name}\", \"batch\": {batch}, \"median_ms\": {med}, \"p10_ms\": {p10}, \"p90_ms\": {p90}, \"reps\": {reps}, \
         \"tflops\": {tflops}, \"step_flops\": {}, \"check_images\": {check_batch}, \"check_loss\": {got}, \"check_against\": \"{checked_by}\", \
         \"check_want\": {want}, \"check_rel\": {rel}, \"first_step_loss\": {first}, \"last_loss\": {last}, \"first_step_s\": {first_step_s}}}",
        net.step_flops(batch)
    ))
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let flag = |name: &str| args.iter().any(|a| a == name);
    let num =
        |name: &str, default: usize| value(name).and_then(|v| v.parse().ok()).unwrap_or(default);
    let reps = num("--reps", 100);
    let resnet_reps = num("--resnet-reps", 30);
    let resnet_batch = num("--resnet-batch", 256);
    let out = value("--out").unwrap_or_else(|| "bench/results/train_fusegraph.json".into());
    // `--only TEXT`: the cases whose name contains TEXT (for profiling one).
    let only = value("--only");
    let wanted = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    if flag("--plan") {
        return plan::print_plan(resnet_batch, flag("--plan-args"));
    }
    let dev = if flag("--cuda") {
        open_cuda()?
    } else {
        Device::Cpu
    };
    let modes: &[Mode] = if dev == Device::Cpu {
        &[Mode::Eager]
    } else {
        &[Mode::Eager, Mode::Graph]
    };
    let variants = |modes: &[Mode]| {
        let mut v = vec![
            ("f32", None, Mode::Eager),
            ("bf16 autocast", Some(DType::BF16), Mode::Eager),
        ];
        if modes.contains(&Mode::Graph) {
            v.push(("bf16 autocast + cuda graph", Some(DType::BF16), Mode::Graph));
        }
        v
    };
    let labels = |n: usize| {
        Tensor::from_vec(
            (0..n as i32).map(|i| (i * 7) % 10).collect::<Vec<i32>>(),
            [n],
            &dev,
        )
    };
    let mut cases = Vec::new();

    if !flag("--skip-mlp") {
        let x = Tensor::randn([256, 784], 7, DType::F32, &dev)?;
        let y = labels(256)?;
        Tensor::realize_all(&[x.clone(), y.clone()])?;
        for (label, autocast, mode) in variants(modes) {
            if !wanted(&format!("mlp {label}")) {
                continue;
            }
            let net = Mlp::new(&dev)?;
            let opt = Box::new(Adam::new(net.parameters(), AdamOptions::default())?);
            let case = Case {
                name: format!("mlp {label}"),
                net: &net,
                opt,
                autocast,
                mode,
                reps,
                check_batch: 16,
                cpu_twin: None,
            };
            cases.push(time_case(case, &x, &y, dev)?);
            write_json(&out, dev, &cases)?;
        }
    }
    if !flag("--skip-resnet") {
        let x = Tensor::randn([resnet_batch, 32, 32, 3], 8, DType::F32, &dev)?;
        let y = labels(resnet_batch)?;
        Tensor::realize_all(&[x.clone(), y.clone()])?;
        for (label, autocast, mode) in variants(modes) {
            if !wanted(&format!("resnet18 {label}")) {
                continue;
            }
            let net = ResNet18::new(&dev)?;
            let opt = Box::new(Sgd::new(net.parameters(), 0.1, 0.9, 0.0));
            let case = Case {
                name: format!("resnet18 {label}"),
                net: &net,
                opt,
                autocast,
                mode,
                reps: resnet_reps,
                check_batch: 2.min(resnet_batch),
                cpu_twin: Some(|d| Ok(Box::new(ResNet18::new(d)?))),
            };
            cases.push(time_case(case, &x, &y, dev)?);
            write_json(&out, dev, &cases)?;
        }
    }
    write_json(&out, dev, &cases)
}

/// Writes the cases so far (after every case, so a run cut short keeps
/// what it measured).
fn write_json(out: &str, dev: Device, cases: &[String]) -> Result<()> {
    let describe = match dev {
        Device::Cpu => "cpu".to_string(),
        d => fusegraph::backend::get(d)?.describe(),
    };
    let json = format!(
        "{{\n  \"device\": \"{}\",\n  \"describe\": {:?},\n  \"threads\": {},\n  \"note\": \"eager step = forward + backward + optimizer update built and realized as one graph (schedule cached); cuda graph = that step recorded once with state kept in place (step_in_place, assign) and replayed\",\n  \"cases\": [\n    {}\n  ]\n}}\n",
        dev.name(),
        describe,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        cases.join(",\n    ")
    );
    if let Err(e) = std::fs::write(out, json) {
        eprintln!("train_bench: could not write {out}: {e}");
    }
    Ok(())
}

#[cfg(feature = "cuda")]
fn open_cuda() -> Result<Device> {
    use fusegraph::CudaDevice;
    Device::cuda(0)
}

#[cfg(feature = "cuda")]
fn capture<T>(dev: Device, f: impl FnOnce() -> Result<T>) -> Result<fusegraph::cuda::Captured<T>> {
    fusegraph::cuda::capture(&dev, f)
}

#[cfg(not(feature = "cuda"))]
fn open_cuda() -> Result<Device> {
    Err(no_cuda())
}

#[cfg(not(feature = "cuda"))]
fn capture<T>(_dev: Device, _f: impl FnOnce() -> Result<T>) -> Result<NoGraph<T>> {
    Err(no_cuda())
}

#[cfg(not(feature = "cuda"))]
fn no_cuda() -> Error {
    Error::DeviceUnavailable {
        op: "train_bench",
        device: "cuda".into(),
        why: "built without the `cuda` feature".into(),
    }
}

/// Stands in for `Captured` without the `cuda` feature (never built: the
/// CPU runs eager cases only).
#[cfg(not(feature = "cuda"))]
struct NoGraph<T>(T);

#[cfg(not(feature = "cuda"))]
impl<T> NoGraph<T> {
    fn replay(&self) -> Result<()> {
        Err(no_cuda())
    }
    fn value(&self) -> &T {
        &self.0
    }
}
