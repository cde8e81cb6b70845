//! `fusegraph bench --suite wgpu`: the wgpu backend on whatever adapter
//! opens (Vulkan on a GPU, lavapipe on a CPU). Each case is timed end to end
//! as a user calls it (build the lazy graph, `realize`, then
//! `synchronize(Device::Wgpu)` before the clock stops), checked against the
//! f64 reference in the same run, and written as JSON with the adapter's
//! name and granted limits. `bench/wgpu_torch.py` times PyTorch on the same
//! cases on the same GPU and merges both into `bench/results/wgpu.json`.

use std::path::Path;

use fusegraph_core::backend::wgpu::open_blocking;
use fusegraph_core::backend::Backend;
use fusegraph_core::{profile, synchronize, Device, Error, Result, Tensor};
use serde_json::{json, Value};

use super::measure::{check, cost, input, stats_of, time, Check, Stats};
use super::progress::Progress;

/// Relative tolerance (to the largest reference magnitude) for f32 results.
const TOL: f64 = 1e-4;

/// Realizations submitted back to back per synchronize in the pipelined timing.
const PIPELINE: usize = 10;

type Build = Box<dyn Fn() -> Result<Tensor>>;
type Verify = Box<dyn Fn(&Tensor) -> Result<Check>>;

struct Case {
    name: &'static str,
    what: &'static str,
    reps: usize,
    /// FLOPs and bytes of the operation itself (minimum traffic), for rates.
    flops: f64,
    bytes: f64,
    build: Build,
    verify: Verify,
}

/// The GPU's own time for one realization of `build`: the profiler submits
/// each kernel on its own and, with timestamp queries, records the time
/// from its first dispatch to its last write; the kernels' times are summed
/// per run. The median of `reps` runs after one warm-up. This is the figure
/// to set beside a peer's CUDA-event time: it leaves out the host's
/// submission and wait, which the pipelined figure still contains.
fn kernel_time(build: &Build, reps: usize) -> Result<Stats> {
    let mut runs = Vec::with_capacity(reps);
    for i in 0..=reps {
        let scope = profile::Scope::start();
        build()?.realize()?;
        synchronize(Device::Wgpu)?;
        let ns: u64 = scope.finish().records.iter().map(|r| r.dur_ns).sum();
        if i > 0 {
            runs.push(ns as f64 * 1e-9);
        }
    }
    Ok(stats_of(1, runs))
}

/// Seconds of back-to-back load on each case before it is timed, on a real
/// GPU. Under Vulkan the NVIDIA driver lowers the clocks while the GPU
/// idles (here: while the previous case's result is checked on the host)
/// and raises them again only under load: with the cases run back to back
/// and no such warm-up, the softmax row kernel (short, and bound by the
/// SM clock more than the copy is) timed 0.106-0.122 ms of GPU time on
/// H100s, and 0.052 ms when the GPU had been busy just before, with the
/// SM clock sampled at 870 MHz in one such dip against 1980 MHz under
/// load. A CUDA peer keeps its clocks up on its own.
const CASE_WARMUP_S: f64 = 1.0;

/// Keeps the GPU busy with `probe` (realized back to back, one synchronize
/// per batch) for `seconds`; returns the probe's time per op in the first
/// and in the last batch, so the run records how far the clocks moved.
fn warm_clocks(probe: &Build, seconds: f64) -> Result<Value> {
    let start = std::time::Instant::now();
    let mut batches: Vec<f64> = Vec::new();
    while start.elapsed().as_secs_f64() < seconds {
        let t = std::time::Instant::now();
        for _ in 0..PIPELINE {
            probe()?.realize()?;
        }
        synchronize(Device::Wgpu)?;
        batches.push(t.elapsed().as_secs_f64() / PIPELINE as f64);
    }
    Ok(json!({
        "seconds": start.elapsed().as_secs_f64(),
        "batches": batches.len(),
        "first_batch_s_per_op": batches.first(),
        "last_batch_s_per_op": batches.last(),
    }))
}

fn on_gpu(shape: &[usize], seed: u64) -> Result<Tensor> {
    let t = input(shape, seed)?.to_device(&Device::Wgpu)?;
    t.realize()?;
    Ok(t)
}

/// The first `n` elements of a flat tensor (what a check compares).
fn head(t: &Tensor, n: usize) -> Result<Tensor> {
    t.narrow(0, 0, n)
}

fn cases(quick: bool) -> Result<Vec<Case>> {
    let big = if quick { 1 << 22 } else { 64 << 20 };
    let mm = if quick { 1024 } else { 4096 };
    let sm = if quick { 1024 } else { 4096 };
    let reps = |n: usize| if quick { (n / 10).max(3) } else { n };
    let (x, y, z) = (on_gpu(&[big], 1)?, on_gpu(&[big], 2)?, on_gpu(&[big], 3)?);
    let (a, b) = (on_gpu(&[mm, mm], 11)?, on_gpu(&[mm, mm], 12)?);
    let s = on_gpu(&[sm, sm], 21)?;
    let tiny = on_gpu(&[16], 31)?;
    let nb = big as f64;
    let mut v = Vec::new();
    {
        let (x1, x2) = (x.clone(), x.clone());
        v.push(Case {
            name: "copy_64m_f32",
            what: "y = -x over 64M f32 (a copy with one op: read + write)",
            reps: reps(100),
            flops: nb,
            bytes: 8.0 * nb,
            build: Box::new(move || x1.neg()),
            verify: Box::new(move |o| check(&head(o, 1 << 16)?, &head(&x2, 1 << 16)?.neg()?, TOL)),
        });
    }
    {
        let (x1, y1, z1) = (x.clone(), y.clone(), z.clone());
        let (x2, y2, z2) = (x.clone(), y.clone(), z.clone());
        v.push(Case {
            name: "fused3_64m_f32",
            what: "relu(x * y + z) over 64M f32: one fused kernel, 3 reads + 1 write",
            reps: reps(100),
            flops: 3.0 * nb,
            bytes: 16.0 * nb,
            build: Box::new(move || x1.mul(&y1)?.add(&z1)?.relu()),
            verify: Box::new(move |o| {
                let n = 1 << 16;
                check(
                    &head(o, n)?,
                    &head(&x2, n)?
                        .mul(&head(&y2, n)?)?
                        .add(&head(&z2, n)?)?
                        .relu()?,
                    TOL,
                )
            }),
        });
    }
    {
        let (s1, s2) = (s.clone(), s.clone());
        let n = sm as f64 * sm as f64;
        v.push(Case {
            name: "softmax_4096x4096_f32",
            what: "softmax over the last axis of 4096x4096 f32: one row kernel",
            reps: reps(100),
            flops: 5.0 * n,
            bytes: 8.0 * n,
            build: Box::new(move || s1.softmax(-1)),
            verify: Box::new(move |o| {
                check(&o.narrow(0, 0, 8)?, &s2.narrow(0, 0, 8)?.softmax(-1)?, TOL)
            }),
        });
    }
    {
        let (a1, b1, a2, b2) = (a.clone(), b.clone(), a.clone(), b.clone());
        let n = mm as f64;
        v.push(Case {
            name: "matmul_4096_f32",
            what: "f32 matmul 4096x4096 @ 4096x4096 (shaders/matmul.wgsl)",
            reps: reps(50),
            flops: 2.0 * n * n * n,
            bytes: 12.0 * n * n,
            build: Box::new(move || a1.matmul(&b1)),
            verify: Box::new(move |o| {
                check(&o.narrow(0, 0, 8)?, &a2.narrow(0, 0, 8)?.matmul(&b2)?, TOL)
            }),
        });
    }
    {
        let (t1, t2) = (tiny.clone(), tiny.clone());
        v.push(Case {
            name: "chain100_tiny",
            what: "100 elementwise ops on 16 f32, built and realized as one graph (small-op overhead)",
            reps: reps(100),
            flops: 100.0 * 16.0,
            bytes: 128.0,
            build: Box::new(move || chain(&t1)),
            verify: Box::new(move |o| check(o, &chain(&t2)?, TOL)),
        });
    }
    Ok(v)
}

/// 100 cheap ops (a bounded mix, so values stay finite).
fn chain(t: &Tensor) -> Result<Tensor> {
    let mut x = t.clone();
    for i in 0..100 {
        x = match i % 4 {
            0 => x.mul_scalar(0.9)?,
            1 => x.add_scalar(0.1)?,
            2 => x.tanh()?,
            _ => x.sub_scalar(0.05)?,
        };
    }
    Ok(x)
}

pub fn run(out: &Path, quick: bool) -> Result<bool> {
    let be = open_blocking()?;
    let details = be.details();
    eprintln!("adapter: {}", be.describe());
    let limits = be.limits();
    let warmup = if quick { 2 } else { 5 };
    let mut results = Vec::new();
    let mut all_ok = true;
    let cases = cases(quick)?;
    let on_gpu = !quick && details.device_type != "Cpu";
    let progress = Progress::new("wgpu", cases.len());
    for case in cases {
        progress.start(case.name);
        let probe = (case.build)()?;
        let c = cost(&probe, &limits)?;
        let warm = if on_gpu {
            warm_clocks(&case.build, CASE_WARMUP_S)?
        } else {
            Value::Null
        };
        // Back to back: PIPELINE realizations, one synchronize, time / PIPELINE. The
        // GPU's own time per operation once the host's wait for each result
        // is out of the way (what CUDA-event timings of a peer measure).
        let pl = time(1, (case.reps / 5).max(3), || {
            for _ in 0..PIPELINE {
                (case.build)()?.realize()?;
            }
            synchronize(Device::Wgpu)
        })?;
        let per = |x: f64| x / PIPELINE as f64;
        let tp = per(pl.median_s);
        let gpu_time = if details.timestamps {
            Some(kernel_time(&case.build, (case.reps / 5).max(3))?)
        } else {
            None
        };
        // Last: one synchronize per op leaves the GPU idle between ops.
        let st = time(warmup, case.reps, || {
            (case.build)()?.realize()?;
            synchronize(Device::Wgpu)
        })?;
        let out = (case.build)()?;
        out.realize()?;
        let chk = (case.verify)(&out)?;
        all_ok &= chk.ok;
        let t = st.median_s;
        progress.line(&format!(
            "{:<24} {:>10.3} ms  (p10 {:.3}, p90 {:.3}, {} reps)  {:>9.1} GFLOP/s {:>8.1} GB/s  {} kernel(s)  err {:.1e} {}",
            case.name,
            t * 1e3,
            st.p10_s * 1e3,
            st.p90_s * 1e3,
            st.reps,
            case.flops / t / 1e9,
            case.bytes / t / 1e9,
            c.kernels,
            chk.max_err_rel_to_max,
            if chk.ok { "ok" } else { "FAILED" }
        ));
        progress.line(&format!(
            "{:<24} {:>10.3} ms per op pipelined ({PIPELINE} back to back)  {:>9.1} GFLOP/s {:>8.1} GB/s",
            "",
            tp * 1e3,
            case.flops / tp / 1e9,
            case.bytes / tp / 1e9
        ));
        if let Some(g) = &gpu_time {
            progress.line(&format!(
                "{:<24} {:>10.3} ms GPU time (timestamps)  {:>9.1} GFLOP/s {:>8.1} GB/s",
                "",
                g.median_s * 1e3,
                case.flops / g.median_s / 1e9,
                case.bytes / g.median_s / 1e9
            ));
        }
        progress.done();
        let gpu_json = gpu_time.map(|g| {
            json!({
                "reps": g.reps,
                "median_s": g.median_s,
                "p10_s": g.p10_s,
                "p90_s": g.p90_s,
                "gflops": case.flops / g.median_s / 1e9,
                "gbps": case.bytes / g.median_s / 1e9,
            })
        });
        results.push(json!({
            "name": case.name,
            "what": case.what,
            "stats": st,
            "kernels": c.kernels,
            "flops": case.flops,
            "bytes": case.bytes,
            "gflops": case.flops / t / 1e9,
            "gbps": case.bytes / t / 1e9,
            "pipelined": {
                "ops_per_sync": PIPELINE,
                "reps": pl.reps,
                "median_s": tp,
                "p10_s": per(pl.p10_s),
                "p90_s": per(pl.p90_s),
                "gflops": case.flops / tp / 1e9,
                "gbps": case.bytes / tp / 1e9,
            },
            "gpu_time": gpu_json,
            "clock_warmup": warm,
            "check": chk,
        }));
    }
    progress.finish();
    let doc = json!({
        "suite": "wgpu",
        "quick": quick,
        "timing": format!("per case on a GPU: {CASE_WARMUP_S} s of back-to-back load (clock_warmup), then pipelined, gpu_time and stats in that order. stats: end-to-end per op (build the lazy graph, realize, synchronize(Device::Wgpu)); {warmup} warm-up runs, then the reps listed; median, p10, p90. pipelined: {PIPELINE} realizations back to back then one synchronize, per op. gpu_time: the kernels' own GPU time from timestamp queries (each kernel submitted on its own, times summed per realization), median after one warm-up; null without timestamp queries"),
        "adapter": {
            "name": details.name,
            "backend": details.backend,
            "device_type": details.device_type,
            "driver": details.driver,
            "shader_f16": details.shader_f16,
            "subgroups": details.subgroups,
            "subgroup_sizes": [details.subgroup_sizes.0, details.subgroup_sizes.1],
            "timestamp_queries": details.timestamps,
            "reductions": if be.render_options().subgroups { "subgroups" } else { "workgroup-memory tree" },
        },
        "limits": {
            "max_storage_buffers_per_shader_stage": details.max_storage_buffers_per_shader_stage,
            "max_storage_buffer_binding_size": details.max_storage_buffer_binding_size,
            "max_buffer_size": details.max_buffer_size,
            "max_compute_workgroup_storage_size": details.max_compute_workgroup_storage_size,
            "max_compute_invocations_per_workgroup": details.max_compute_invocations_per_workgroup,
            "max_compute_workgroups_per_dimension": details.max_compute_workgroups_per_dimension,
            "fusion_max_kernel_args": limits.max_kernel_args,
        },
        "cases": results,
    });
    write_json(out, &doc)?;
    Ok(all_ok)
}

fn write_json(out: &Path, doc: &Value) -> Result<()> {
    let io = |e: std::io::Error| Error::Backend {
        op: "bench",
        message: format!("{}: {e}", out.display()),
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let text = serde_json::to_string_pretty(doc).map_err(|e| Error::Backend {
        op: "bench",
        message: e.to_string(),
    })?;
    std::fs::write(out, text + "\n").map_err(io)?;
    eprintln!("wrote {}", out.display());
    Ok(())
}
