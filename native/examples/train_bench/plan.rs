//! `--plan`: what the ResNet-18 training step compiles to on a CUDA target,
//! without a GPU. The step (bf16 autocast forward, cross-entropy, gradients
//! and the SGD update of every parameter) is built lazily on the CPU device
//! and compiled with the CUDA backend's fusion limits; the kernels are
//! listed by kind with the bytes each reads and writes, the largest first,
//! so fusion changes can be judged by the memory traffic they save before
//! a GPU run.

use fusegraph::codegen::{render, RenderOptions};
use fusegraph::optim::{Optimizer, Sgd};
use fusegraph::passes::Limits;
use fusegraph::runtime::compiled_for;
use fusegraph::schedule::kernel::{Body, ExprNode, Kernel};
use fusegraph::{autograd, nn, DType, Device, Result, Tensor};

use crate::models::{Model, ResNet18};

/// The CUDA backend's limits (see `CudaBackend::limits`).
fn cuda_limits() -> Limits {
    Limits {
        split_long_reductions: true,
        split_column_reductions: true,
        ..Limits::cpu()
    }
}

pub fn print_plan(batch: usize, with_args: bool) -> Result<()> {
    let dev = Device::Cpu;
    let net = ResNet18::new(&dev)?;
    let x = Tensor::randn([batch, 32, 32, 3], 7, DType::F32, &dev)?;
    let y = Tensor::from_vec(
        (0..batch as i32).map(|i| i % 10).collect::<Vec<_>>(),
        [batch],
        &dev,
    )?;
    Tensor::realize_all(&[x.clone(), y.clone()])?;
    let params = net.parameters();
    // The update as the benchmark's optimiser builds it: SGD with momentum
    // after its first step (a velocity exists, the parameters are packed,
    // so the forward below reads them as views of the packed buffer).
    let zero: Vec<Tensor> = params
        .iter()
        .map(|p| Tensor::zeros(p.shape(), DType::F32, &dev))
        .collect::<Result<_>>()?;
    let mut opt = Sgd::new(params, 0.1, 0.9, 0.0);
    opt.step(&zero, &[])?;
    let leaves = opt.leaves();
    let logits = nn::autocast(DType::BF16, || net.forward(&x))?;
    let loss = logits.cast(DType::F32)?.cross_entropy(&y)?;
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = autograd::grad(&loss, &refs)?;
    let mut outs = opt.updates(&grads)?;
    outs.push(loss);
    let compiled = compiled_for(&outs, &cuda_limits())?;
    let steps = &compiled.schedule.steps;
    // Every generated kernel of the plan must render as CUDA C (the
    // renderer runs here; only NVRTC and the launch need the GPU).
    let opts = RenderOptions::cuda();
    let generated: Vec<&Kernel> = steps
        .iter()
        .map(|s| &*s.kernel)
        .filter(|k| !matches!(k.body, Body::Conv(_)))
        .collect();
    let failures: Vec<String> = generated
        .iter()
        .filter_map(|k| render(k, &opts).err().map(|e| format!("{}: {e}", k.kind())))
        .collect();
    println!(
        "rendered {} kernels as CUDA C, {} failed{}",
        generated.len(),
        failures.len(),
        failures
            .first()
            .map(|f| format!(" (first: {f})"))
            .unwrap_or_default()
    );
    if with_args {
        // Which buffers each large kernel reads: shared inputs of sibling
        // kernels and recomputed producers show up here.
        for (i, s) in steps.iter().enumerate() {
            if s.kernel.bytes() > 60_000_000 {
                let args: Vec<String> = s
                    .args
                    .iter()
                    .zip(&s.kernel.args)
                    .map(|(a, info)| format!("{a:?}:{}", info.len))
                    .collect();
                println!(
                    "step {i} {} {:.1} MB -> slot {}: {}",
                    s.kernel.kind(),
                    s.kernel.bytes() as f64 / 1e6,
                    s.out,
                    args.join(" ")
                );
            }
        }
    }
    let mut rows: Vec<(u64, u64, &'static str, String)> = steps
        .iter()
        .map(|s| {
            (
                s.kernel.bytes(),
                s.kernel.flops(),
                s.kernel.kind(),
                describe(&s.kernel),
            )
        })
        .collect();
    let total: u64 = rows.iter().map(|r| r.0).sum();
    println!(
        "resnet18 bf16 step, batch {batch}: {} kernels, {:.2} GB moved",
        rows.len(),
        total as f64 / 1e9
    );
    let mut kinds: Vec<(&str, usize, u64)> = Vec::new();
    for r in &rows {
        match kinds.iter_mut().find(|k| k.0 == r.2) {
            Some(k) => {
                k.1 += 1;
                k.2 += r.0;
            }
            None => kinds.push((r.2, 1, r.0)),
        }
    }
    kinds.sort_by_key(|k| std::cmp::Reverse(k.2));
    for (kind, n, bytes) in kinds {
        println!("  {kind:<8} {n:>5} kernels {:>8.3} GB", bytes as f64 / 1e9);
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    println!("largest:");
    for (bytes, flops, kind, what) in rows.iter().take(if with_args { 1000 } else { 40 }) {
        println!(
            "  {kind:<8} {:>8.1} MB {:>8.2} GFLOP {what}",
            *bytes as f64 / 1e6,
            *flops as f64 / 1e9
        );
    }
    Ok(())
}

/// The output shape, and for row kernels the domain, reduced axes and stages.
fn describe(k: &Kernel) -> String {
    match &k.body {
        Body::Reduce(r) => format!(
            "out {:?}: domain {:?} over {:?}, {} stage(s), {} loads",
            k.out_shape,
            r.shape,
            r.axes,
            r.stages.len(),
            r.expr
                .nodes
                .iter()
                .filter(|n| matches!(n, ExprNode::Load { .. }))
                .count()
        ),
        _ => format!("out {:?}", k.out_shape),
    }
}
