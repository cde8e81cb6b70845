//! Two tables of the CUDA suite that compare ways of doing the same work:
//!
//! - `crossover`: f32 matmul n×n from host data to a host result, on the CPU
//!   (all cores), on GPU 0 (upload, matmul, read back), and on
//!   `Device::Auto`, plus the GPU time with the inputs already resident.
//!   The smallest n from which the GPU wins end to end is the crossover that
//!   `Device::Auto`'s threshold (`auto::DEFAULT_MIN_GPU_FLOPS`) comes from.
//! - `matmuls_vs_bmm`: 1000 separate 128×128 matmuls, each realized on its
//!   own, against one batched matmul over the same data.
//!
//! Each timing: 5 warm-ups, then the reps listed, median; the GPU is
//! synchronized (or read back) before the clock stops; results are checked
//! against the f64 reference on a sample in the same run.

use fusegraph_core::auto::{self, AutoPolicy};
use fusegraph_core::{synchronize, Device, Result, Tensor};
use serde_json::{json, Value};

use super::measure::{check, input, time, Stats};

/// f32 tolerance, relative to the largest reference magnitude.
const TOL: f64 = 1e-4;

fn checked(got: &Tensor, a: &Tensor, b: &Tensor) -> Result<bool> {
    Ok(check(&got.narrow(0, 0, 2)?, &a.narrow(0, 0, 2)?.matmul(b)?, TOL)?.ok)
}

fn ms(s: &Stats) -> f64 {
    s.median_s * 1e3
}

/// The crossover table; `Ok((json, all checks passed))`.
pub fn crossover(gpu: &Device, quick: bool) -> Result<(Value, bool)> {
    let sizes: &[usize] = if quick {
        &[64, 256, 512]
    } else {
        &[64, 128, 192, 256, 384, 512, 768, 1024, 2048]
    };
    let saved = auto::policy();
    auto::set_policy(AutoPolicy {
        min_gpu_flops: saved.min_gpu_flops,
        gpu: Some(*gpu),
    });
    let mut rows = Vec::new();
    let mut all_ok = true;
    let mut crossover_n: Option<usize> = None;
    for &n in sizes {
        let reps = if n >= 1024 { 20 } else { 50 };
        let a = input(&[n, n], 51)?;
        let b = input(&[n, n], 52)?;
        a.realize()?;
        b.realize()?;
        // Every row ends with the result in a host Vec, as a caller reads it.
        let to_host = |d: &Device| -> Result<Tensor> {
            let y = a.to_device(d)?.matmul(&b.to_device(d)?)?;
            y.to_vec::<f32>()?;
            Ok(y)
        };
        let cpu = time(5, reps, || to_host(&Device::Cpu).map(|_| ()))?;
        let gpu_e2e = time(5, reps, || to_host(gpu).map(|_| ()))?;
        let auto_e2e = time(5, reps, || to_host(&Device::Auto).map(|_| ()))?;
        let (ga, gb) = (a.to_device(gpu)?, b.to_device(gpu)?);
        let resident = time(5, reps, || {
            ga.matmul(&gb)?.realize()?;
            synchronize(*gpu)
        })?;
        let auto_result = to_host(&Device::Auto)?;
        let auto_ran_on = auto_result
            .node()
            .storage()
            .map(|s| s.device().name())
            .unwrap_or_default();
        let ok = checked(&a.matmul(&b)?, &a, &b)?
            && checked(&to_host(gpu)?, &a, &b)?
            && checked(&auto_result, &a, &b)?;
        all_ok &= ok;
        let gpu_wins = gpu_e2e.median_s < cpu.median_s;
        match (gpu_wins, crossover_n) {
            (true, None) => crossover_n = Some(n),
            (false, Some(_)) => crossover_n = None, // not yet for good
            _ => {}
        }
        let best = cpu.median_s.min(gpu_e2e.median_s);
        eprintln!(
            "crossover {n:>5}: cpu {:.3} ms, gpu end to end {:.3} ms, gpu resident {:.3} ms, auto {:.3} ms on {auto_ran_on} ({:.2}x the better one) {}",
            ms(&cpu),
            ms(&gpu_e2e),
            ms(&resident),
            ms(&auto_e2e),
            auto_e2e.median_s / best,
            if ok { "ok" } else { "FAILED" }
        );
        rows.push(json!({
            "n": n,
            "flops": 2.0 * (n as f64).powi(3),
            "cpu": cpu,
            "gpu_end_to_end": gpu_e2e,
            "gpu_resident": resident,
            "auto_end_to_end": auto_e2e,
            "auto_ran_on": auto_ran_on,
            "auto_over_best": auto_e2e.median_s / best,
            "gpu_wins_end_to_end": gpu_wins,
            "check_ok": ok,
        }));
    }
    auto::set_policy(saved);
    let threshold = saved.min_gpu_flops;
    Ok((
        json!({
            "name": "crossover",
            "what": "f32 matmul n x n from host inputs to a host result: CPU (all cores) vs GPU (upload, matmul, read back) vs Device::Auto; GPU with resident inputs for scale",
            "rows": rows,
            "crossover_n": crossover_n,
            "crossover_flops": crossover_n.map(|n| 2.0 * (n as f64).powi(3)),
            "auto_min_gpu_flops": threshold,
            "auto_default_min_gpu_flops": auto::DEFAULT_MIN_GPU_FLOPS,
        }),
        all_ok,
    ))
}

/// 1000 separate 128×128 matmuls vs one bmm on `dev`; `Ok((json, ok))`.
pub fn matmuls_vs_bmm(dev: &Device, quick: bool) -> Result<(Value, bool)> {
    let batch = if quick { 100 } else { 1000 };
    let a = input(&[batch, 128, 128], 61)?.to_device(dev)?;
    let b = input(&[batch, 128, 128], 62)?.to_device(dev)?;
    a.realize()?;
    b.realize()?;
    let pairs: Vec<(Tensor, Tensor)> = (0..batch)
        .map(|i| {
            Ok((
                a.narrow(0, i, 1)?.squeeze(0)?,
                b.narrow(0, i, 1)?.squeeze(0)?,
            ))
        })
        .collect::<Result<_>>()?;
    let reps = if quick { 5 } else { 30 };
    let separate = time(5, reps, || {
        for (x, y) in &pairs {
            x.matmul(y)?.realize()?;
        }
        synchronize(*dev)
    })?;
    let batched = time(5, reps * 3, || {
        a.matmul(&b)?.realize()?;
        synchronize(*dev)
    })?;
    let last = pairs.len() - 1;
    let one = pairs[last].0.matmul(&pairs[last].1)?;
    let ok = check(
        &one.narrow(0, 0, 4)?,
        &pairs[last].0.narrow(0, 0, 4)?.matmul(&pairs[last].1)?,
        TOL,
    )?
    .ok && check(
        &a.matmul(&b)?
            .narrow(0, last, 1)?
            .squeeze(0)?
            .narrow(0, 0, 4)?,
        &pairs[last].0.narrow(0, 0, 4)?.matmul(&pairs[last].1)?,
        TOL,
    )?
    .ok;
    let speedup = separate.median_s / batched.median_s;
    eprintln!(
        "{batch} separate 128x128 matmuls {:.3} ms vs one bmm {:.3} ms = {speedup:.1}x  {}",
        ms(&separate),
        ms(&batched),
        if ok { "ok" } else { "FAILED" }
    );
    Ok((
        json!({
            "name": "matmuls_vs_bmm",
            "what": format!("{batch} separate f32 128x128 matmuls (each realized: one cuBLASLt call each) vs one batched matmul [{batch},128,128] (one strided-batched call)"),
            "batch": batch,
            "flops": 2.0 * batch as f64 * 128.0f64.powi(3),
            "separate": separate,
            "bmm": batched,
            "bmm_speedup": speedup,
            "check_ok": ok,
        }),
        ok,
    ))
}
