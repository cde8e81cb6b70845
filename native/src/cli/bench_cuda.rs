//! `fusegraph bench --suite cuda`: the CUDA backend on GPU 0. Each case is
//! timed end to end as a user calls it (build the lazy graph, `realize`,
//! then `synchronize` before the clock stops; 5 warm-ups, then the reps
//! listed; median, p10, p90), checked against the f64 reference on a
//! sample of the output in the same run, and written as JSON with the GPU's
//! details. `bench/cuda_torch.py` times PyTorch eager, torch.compile and
//! CuPy on the same cases on the same GPU; `bench/merge_cuda.py` joins both
//! into `bench/results/cuda.json` with the ratios.

use std::path::Path;
use std::time::Instant;

use fusegraph::cuda::{self, Precision};
use fusegraph::CudaDevice;
use fusegraph_core::backend::Backend;
use fusegraph_core::runtime::{limits_for, realize_with};
use fusegraph_core::{synchronize, DType, Device, Error, Result, Tensor};
use serde_json::{json, Value};

use super::measure::{chain10, check, check_scaled, full_reductions, input, stats_of, time, Check};
use super::progress::Progress;
use super::{bench_crossover, bench_decomp, bench_streams};

type Build = Box<dyn Fn() -> Result<Tensor>>;
type Verify = Box<dyn Fn(&Tensor) -> Result<Check>>;

struct Case {
    name: String,
    what: String,
    reps: usize,
    precision: Precision,
    flops: f64,
    bytes: f64,
    build: Build,
    verify: Verify,
    /// Realize with fusion off (every op its own kernel), to price fusion.
    unfused: bool,
}

/// Relative error (to the largest reference magnitude) a dtype may show.
fn tol(d: DType, p: Precision) -> f64 {
    match (d, p) {
        // TF32 rounds operands to 10 mantissa bits: over k = 4096 the largest
        // element error reaches ~7e-3 of the largest output (PyTorch's too).
        (DType::F32, Precision::Tf32) => 1e-2,
        (DType::F32, _) => 1e-4,
        (DType::F16, _) => 1e-2,
        (DType::BF16, _) => 3e-2,
        _ => 1e-9,
    }
}

fn on(dev: &Device, shape: &[usize], seed: u64, dtype: DType) -> Result<Tensor> {
    let t = input(shape, seed)?.to_device(dev)?.cast(dtype)?;
    t.realize()?;
    Ok(t)
}

fn matmul_case(dev: &Device, n: usize, dtype: DType, p: Precision, reps: usize) -> Result<Case> {
    let (a, b) = (on(dev, &[n, n], 11, dtype)?, on(dev, &[n, n], 12, dtype)?);
    let (a1, b1, a2, b2) = (a.clone(), b.clone(), a, b);
    let label = match (dtype, p) {
        (DType::F32, Precision::Tf32) => "tf32".to_string(),
        (d, _) => d.to_string(),
    };
    let nf = n as f64;
    Ok(Case {
        name: format!("matmul_{n}_{label}"),
        what: format!("{label} matmul {n}x{n} @ {n}x{n} (cuBLASLt)"),
        reps,
        precision: p,
        unfused: false,
        flops: 2.0 * nf * nf * nf,
        bytes: 3.0 * nf * nf * dtype.size_in_bytes() as f64,
        build: Box::new(move || a1.matmul(&b1)),
        verify: Box::new(move |o| {
            check(
                &o.narrow(0, 0, 4)?,
                &a2.narrow(0, 0, 4)?.matmul(&b2)?,
                tol(dtype, p),
            )
        }),
    })
}

fn cases(dev: &Device, quick: bool) -> Result<Vec<Case>> {
    let reps = |n: usize| if quick { (n / 10).max(3) } else { n };
    let mut v = Vec::new();
    let sizes: &[usize] = if quick {
        &[512, 1024]
    } else {
        &[512, 1024, 2048, 4096]
    };
    for &n in sizes {
        v.push(matmul_case(
            dev,
            n,
            DType::F32,
            Precision::Highest,
            reps(100),
        )?);
    }
    let big: &[usize] = if quick { &[1024] } else { &[4096, 8192] };
    for &n in big {
        v.push(matmul_case(dev, n, DType::F32, Precision::Tf32, reps(100))?);
        v.push(matmul_case(
            dev,
            n,
            DType::F16,
            Precision::Highest,
            reps(100),
        )?);
        v.push(matmul_case(
            dev,
            n,
            DType::BF16,
            Precision::Highest,
            reps(100),
        )?);
    }
    {
        let nb = if quick { 100 } else { 1000 };
        let (a, b) = (
            on(dev, &[nb, 128, 128], 13, DType::F32)?,
            on(dev, &[nb, 128, 128], 14, DType::F32)?,
        );
        let (a1, b1, a2, b2) = (a.clone(), b.clone(), a, b);
        v.push(Case {
            name: format!("bmm_{nb}x128x128_f32"),
            what: format!("f32 batched matmul [{nb},128,128] @ [{nb},128,128]: one strided-batched cuBLASLt call"),
            reps: reps(100),
            precision: Precision::Highest,
            unfused: false,
            flops: 2.0 * nb as f64 * 128.0f64.powi(3),
            bytes: 3.0 * 4.0 * nb as f64 * 128.0 * 128.0,
            build: Box::new(move || a1.matmul(&b1)),
            verify: Box::new(move |o| {
                check(&o.narrow(0, 0, 2)?, &a2.narrow(0, 0, 2)?.matmul(&b2.narrow(0, 0, 2)?)?, 1e-4)
            }),
        });
    }
    let n = if quick { 1 << 22 } else { 64 << 20 };
    let (x, y, z) = (
        on(dev, &[n], 1, DType::F32)?,
        on(dev, &[n], 2, DType::F32)?,
        on(dev, &[n], 3, DType::F32)?,
    );
    for relu in [false, true] {
        let (x1, y1, z1, x2, y2, z2) = (
            x.clone(),
            y.clone(),
            z.clone(),
            x.clone(),
            y.clone(),
            z.clone(),
        );
        let f = move |a: &Tensor, b: &Tensor, c: &Tensor| -> Result<Tensor> {
            let t = a.mul(b)?.add(c)?;
            if relu {
                t.relu()
            } else {
                Ok(t)
            }
        };
        let h = 1 << 16;
        v.push(Case {
            name: format!("fused_{}64m_f32", if relu { "relu_" } else { "" }),
            what: format!(
                "{} over 64M f32: one generated kernel, 3 reads + 1 write",
                if relu { "relu(a*b+c)" } else { "a*b+c" }
            ),
            reps: reps(100),
            precision: Precision::Highest,
            unfused: false,
            flops: if relu { 3.0 } else { 2.0 } * n as f64,
            bytes: 16.0 * n as f64,
            build: Box::new(move || f(&x1, &y1, &z1)),
            verify: Box::new(move |o| {
                check(
                    &o.narrow(0, 0, h)?,
                    &f(
                        &x2.narrow(0, 0, h)?,
                        &y2.narrow(0, 0, h)?,
                        &z2.narrow(0, 0, h)?,
                    )?,
                    1e-5,
                )
            }),
        });
    }
    drop((x, y, z));
    // The CPU suite's 10-op chain on 64M f32: one fused kernel (2 passes over
    // memory), then fusion off (10 kernels, 20 passes) as an eager library runs it.
    let s = on(dev, &[n], 7, DType::F32)?;
    for unfused in [false, true] {
        let (s1, s2) = (s.clone(), s.clone());
        let h = 1 << 16;
        v.push(Case {
            name: format!(
                "chain_10op_64m_f32_{}",
                if unfused { "unfused" } else { "fused" }
            ),
            what: format!(
                "10-op elementwise chain (x*1.01+s, 5 times) on 64M f32, {}",
                if unfused {
                    "fusion off: 10 kernels"
                } else {
                    "fused: 1 kernel"
                }
            ),
            reps: reps(100),
            precision: Precision::Highest,
            unfused,
            flops: 10.0 * n as f64,
            // Fused: read s, write y; unfused: each kernel reads 1-2 and writes 1.
            bytes: if unfused { 25.0 } else { 2.0 } * 4.0 * n as f64,
            build: Box::new(move || chain10(&s1)),
            verify: Box::new(move |o| {
                check(&o.narrow(0, 0, h)?, &chain10(&s2.narrow(0, 0, h)?)?, 1e-5)
            }),
        });
    }
    drop(s);
    // The CPU suite's broadcast adds and full reductions, on the GPU.
    for (xs, rs) in [
        (vec![1024, 1024], vec![1024]),
        (vec![1024, 1024, 3], vec![3]),
        (vec![64, 1024, 1024], vec![64, 1, 1]),
    ] {
        let (x, y) = (on(dev, &xs, 4, DType::F32)?, on(dev, &rs, 5, DType::F32)?);
        let (x1, y1, x2, y2) = (x.clone(), y.clone(), x, y);
        let ne = xs.iter().product::<usize>() as f64;
        let name = |d: &[usize]| {
            d.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("x")
        };
        v.push(Case {
            name: format!("bcast_{}_plus_{}", name(&xs), name(&rs)),
            what: format!("broadcast add {xs:?} + {rs:?}, f32 (one generated kernel)"),
            reps: reps(100),
            precision: Precision::Highest,
            unfused: false,
            flops: ne,
            bytes: 8.0 * ne,
            build: Box::new(move || x1.add(&y1)),
            verify: Box::new(move |o| {
                check(
                    &o.narrow(0, 0, 1)?,
                    // y's own first slice only when it has x's leading axis.
                    &x2.narrow(0, 0, 1)?.add(&if y2.rank() == x2.rank() {
                        y2.narrow(0, 0, 1)?
                    } else {
                        y2.clone()
                    })?,
                    1e-5,
                )
            }),
        });
    }
    let x = on(dev, &[1024, 1024], 6, DType::F32)?;
    for (op, f, scale) in full_reductions(&x)? {
        let (x1, x2) = (x.clone(), x.clone());
        v.push(Case {
            name: format!("{op}_1024x1024_f32"),
            what: format!("{op} of all elements of 1024x1024 f32"),
            reps: reps(100),
            precision: Precision::Highest,
            unfused: false,
            flops: 1024.0 * 1024.0,
            bytes: 4.0 * 1024.0 * 1024.0,
            build: Box::new(move || f(&x1)),
            verify: Box::new(move |o| check_scaled(o, &f(&x2)?, scale, 1e-5)),
        });
    }
    drop(x);
    // A transposed right operand three ways at 4096: as a view (a transpose
    // flag for cuBLASLt, no copy), made contiguous by a copy kernel inside
    // the timed call, and the matmul of the stored contiguous transpose.
    if !quick {
        let nt = 4096;
        let (a, bt) = (
            on(dev, &[nt, nt], 11, DType::F32)?,
            on(dev, &[nt, nt], 12, DType::F32)?,
        );
        let physical = bt.t()?.contiguous()?;
        physical.realize()?;
        let nf = nt as f64;
        for (label, variant) in [("view", 0), ("contiguous", 1), ("physical", 2)] {
            let (a1, b1, p1) = (a.clone(), bt.clone(), physical.clone());
            let (a2, b2) = (a.clone(), bt.clone());
            v.push(Case {
                name: format!("matmul_{nt}_f32_rhs_t_{label}"),
                what: match variant {
                    0 => {
                        format!("f32 matmul {nt}² @ b.t(): the transposed view as a cuBLASLt flag")
                    }
                    1 => format!(
                        "f32 matmul {nt}² @ b.t().contiguous(): a copy kernel, then the matmul"
                    ),
                    _ => format!("f32 matmul {nt}² @ the transpose stored contiguous beforehand"),
                },
                reps: reps(100),
                precision: Precision::Highest,
                unfused: false,
                flops: 2.0 * nf * nf * nf,
                bytes: 3.0 * nf * nf * 4.0,
                build: Box::new(move || match variant {
                    0 => a1.matmul(&b1.t()?),
                    1 => {
                        let c = b1.t()?.contiguous()?;
                        c.realize()?;
                        a1.matmul(&c)
                    }
                    _ => a1.matmul(&p1),
                }),
                verify: Box::new(move |o| {
                    check(
                        &o.narrow(0, 0, 4)?,
                        &a2.narrow(0, 0, 4)?.matmul(&b2.t()?)?,
                        1e-4,
                    )
                }),
            });
        }
    }
    let rows: &[usize] = if quick { &[1024] } else { &[4096, 32768] };
    for &r in rows {
        for dtype in [DType::F32, DType::BF16] {
            let s = on(dev, &[r, 4096], 21, dtype)?;
            let w = on(dev, &[4096], 22, dtype)?;
            let bi = on(dev, &[4096], 23, dtype)?;
            let ne = (r * 4096) as f64;
            let es = dtype.size_in_bytes() as f64;
            let (s1, s2) = (s.clone(), s.clone());
            v.push(Case {
                name: format!("softmax_{r}x4096_{dtype}"),
                what: format!(
                    "softmax over the last axis of {r}x4096 {dtype}: one generated row kernel"
                ),
                reps: reps(100),
                precision: Precision::Highest,
                unfused: false,
                flops: 5.0 * ne,
                bytes: 2.0 * es * ne,
                build: Box::new(move || s1.softmax(-1)),
                verify: Box::new(move |o| {
                    check(
                        &o.narrow(0, 0, 8)?,
                        &s2.narrow(0, 0, 8)?.softmax(-1)?,
                        tol(dtype, Precision::Highest),
                    )
                }),
            });
            let (s1, w1, b1) = (s.clone(), w.clone(), bi.clone());
            let (s2, w2, b2) = (s, w, bi);
            v.push(Case {
                name: format!("layer_norm_{r}x4096_{dtype}"),
                what: format!(
                    "layer_norm (weight, bias, eps 1e-5) over the last axis of {r}x4096 {dtype}"
                ),
                reps: reps(100),
                precision: Precision::Highest,
                unfused: false,
                flops: 8.0 * ne,
                bytes: 2.0 * es * ne,
                build: Box::new(move || s1.layer_norm(1, Some(&w1), Some(&b1), 1e-5)),
                verify: Box::new(move |o| {
                    check(
                        &o.narrow(0, 0, 8)?,
                        &s2.narrow(0, 0, 8)?
                            .layer_norm(1, Some(&w2), Some(&b2), 1e-5)?,
                        tol(dtype, Precision::Highest),
                    )
                }),
            });
        }
    }
    v.extend(decomp_cases(dev, &reps)?);
    Ok(v)
}

/// SVD, QR and Cholesky of 512×512 f32 (cuSOLVER), on the CPU suite's
/// inputs. Flop counts are the nominal LAPACK ones (Cholesky n³/3, QR with
/// Q formed 8n³/3, thin SVD with vectors 22n³), for scale only.
fn decomp_cases(dev: &Device, reps: &dyn Fn(usize) -> usize) -> Result<Vec<Case>> {
    let n = 512;
    let nf = n as f64;
    let bytes = 2.0 * 4.0 * nf * nf;
    let a = bench_decomp::decomp_input(n, 31)?.to_device(dev)?;
    let spd = bench_decomp::spd_input(n, 32)?.to_device(dev)?;
    a.realize()?;
    spd.realize()?;
    let (a1, a2, a3, a4, s1, s2) = (a.clone(), a.clone(), a.clone(), a, spd.clone(), spd);
    let (a5, a6) = (a1.clone(), a1.clone());
    Ok(vec![
        Case {
            name: "svd_512_f32".into(),
            what: "thin SVD (U, S, Vt) of 512x512 f32 (cuSOLVER gesvdj)".into(),
            reps: reps(20),
            precision: Precision::Highest,
            unfused: false,
            flops: 22.0 * nf * nf * nf,
            bytes,
            build: Box::new(move || a1.svd().map(|(_, s, _)| s)),
            verify: Box::new(move |_| bench_decomp::check_svd(&a2)),
        },
        Case {
            name: "svd_512_f32_via_f64".into(),
            what: "the same SVD computed in f64 (cast on the device, cuSOLVER Dgesvdj) and rounded back to f32".into(),
            reps: reps(20),
            precision: Precision::Highest,
            unfused: false,
            flops: 22.0 * nf * nf * nf,
            bytes,
            build: Box::new(move || a5.cast(DType::F64)?.svd()?.1.cast(DType::F32)),
            verify: Box::new(move |_| {
                let (u, s, vt) = a6.cast(DType::F64)?.svd()?;
                let f32_factors = (u.cast(DType::F32)?, s.cast(DType::F32)?, vt.cast(DType::F32)?);
                bench_decomp::check_factors_svd(&a6, &f32_factors)
            }),
        },
        Case {
            name: "qr_512_f32".into(),
            what: "reduced QR of 512x512 f32, then |R| (cuSOLVER geqrf + orgqr)".into(),
            reps: reps(50),
            precision: Precision::Highest,
            unfused: false,
            flops: 8.0 / 3.0 * nf * nf * nf,
            bytes,
            build: Box::new(move || a3.qr()?.1.abs()),
            verify: Box::new(move |_| bench_decomp::check_qr(&a4)),
        },
        Case {
            name: "cholesky_512_f32".into(),
            what: "Cholesky L of a 512x512 f32 SPD matrix (cuSOLVER potrf)".into(),
            reps: reps(100),
            precision: Precision::Highest,
            unfused: false,
            flops: nf * nf * nf / 3.0,
            bytes,
            build: Box::new(move || s1.cholesky()),
            verify: Box::new(move |_| bench_decomp::check_cholesky(&s2)),
        },
    ])
}

/// Where the host time of one eager op goes: building the lazy op, the
/// graph walk and schedule-cache lookup, and the backend's launch of the
/// cached schedule (no wait for the GPU), each per op over `ops` ops.
fn dispatch_breakdown(dev: &Device, x0: &Tensor, ops: usize) -> Result<Value> {
    use fusegraph_core::graph::build::walk;
    use fusegraph_core::runtime::compiled_for;
    let per_op = |t: Instant| t.elapsed().as_secs_f64() / ops as f64 * 1e6;
    let limits = limits_for(*dev)?;
    let backend = fusegraph_core::backend::get(*dev)?;
    let mut best = [f64::INFINITY; 4];
    for _ in 0..5 {
        let t = Instant::now();
        let built: Vec<Tensor> = (0..ops)
            .map(|_| x0.add_scalar(1.0))
            .collect::<Result<_>>()?;
        best[0] = best[0].min(per_op(t));
        let t = Instant::now();
        let compiled = built
            .iter()
            .map(|y| compiled_for(std::slice::from_ref(y), &limits))
            .collect::<Result<Vec<_>>>()?;
        best[1] = best[1].min(per_op(t));
        let leaves = walk(&[built[0].node().clone()]).leaf_storage;
        let t = Instant::now();
        let mut outs = Vec::with_capacity(ops);
        for c in &compiled {
            outs.push(backend.execute(&c.schedule, &leaves)?);
        }
        best[2] = best[2].min(per_op(t));
        drop(outs);
        synchronize(*dev)?;
        let floor = cuda::launch_floor(dev, &compiled[0].schedule, &leaves, ops)?;
        best[3] = best[3].min(floor.as_secs_f64() * 1e6);
    }
    eprintln!(
        "eager host time per op: build {:.2} us, walk + cache lookup {:.2} us, backend execute {:.2} us, of which a bare cuLaunchKernel {:.2} us (best of 5)",
        best[0], best[1], best[2], best[3]
    );
    Ok(
        json!({ "build_op": best[0], "walk_and_lookup": best[1], "backend_execute": best[2], "bare_launch": best[3], "of": "best of 5 runs of 1000 ops; bare_launch is cuLaunchKernel alone on the same kernel and buffers, the floor under backend_execute" }),
    )
}

/// 1000 small dependent kernels (`x + 1` on 1024 f32, each realized on its
/// own): per-op eager dispatch, and the same chain as a replayed CUDA graph.
fn dispatch_and_graph(dev: &Device, quick: bool) -> Result<(Value, bool)> {
    let ops = 1000;
    let x0 = on(dev, &[1024], 41, DType::F32)?;
    let start: Vec<f32> = x0.to_vec()?;
    let chain = |x: &Tensor| -> Result<Tensor> {
        let mut x = x.clone();
        for _ in 0..ops {
            x = x.add_scalar(1.0)?;
            x.realize()?;
        }
        Ok(x)
    };
    let reps = if quick { 5 } else { 30 };
    let eager = time(3, reps, || {
        chain(&x0)?;
        synchronize(*dev)
    })?;
    // Host-side cost alone: the same loop without waiting for the GPU.
    let mut host = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let y = chain(&x0)?;
        host.push(t.elapsed().as_secs_f64());
        drop(y);
        synchronize(*dev)?;
    }
    let host = stats_of(0, host);
    let breakdown = dispatch_breakdown(dev, &x0, ops)?;
    let step = cuda::capture(dev, || chain(&x0))?;
    let graph = time(5, 100, || {
        step.replay()?;
        synchronize(*dev)
    })?;
    step.replay()?;
    let got: Vec<f32> = step.value().to_vec()?;
    let ok = got
        .iter()
        .zip(&start)
        .all(|(g, s)| (g - (s + ops as f32)).abs() <= 1e-3 * (s.abs() + ops as f32));
    let per_op_us = eager.median_s / ops as f64 * 1e6;
    let speedup = eager.median_s / graph.median_s;
    eprintln!(
        "eager dispatch: {per_op_us:.2} us/op end to end ({:.2} us/op host-side); graph of {} nodes: {:.3} ms vs {:.3} ms eager = {speedup:.1}x  {}",
        host.median_s / ops as f64 * 1e6,
        step.kernels(),
        graph.median_s * 1e3,
        eager.median_s * 1e3,
        if ok { "ok" } else { "FAILED" }
    );
    Ok((
        json!({
            "name": "graph_1000_small_kernels",
            "what": "1000 dependent `x + 1` kernels on 1024 f32, each realized on its own: eager (one launch each) vs one replay of the captured CUDA graph",
            "ops": ops,
            "eager": eager,
            "eager_host_only": host,
            "eager_us_per_op": per_op_us,
            "eager_host_us_per_op": host.median_s / ops as f64 * 1e6,
            "eager_host_breakdown_us_per_op": breakdown,
            "graph_replay": graph,
            "graph_nodes": step.kernels(),
            "graph_speedup": speedup,
            "check_ok": ok,
        }),
        ok,
    ))
}

/// Runs the suite; `only`: just the cases whose name contains it.
pub fn run(out: &Path, quick: bool, only: Option<&str>) -> Result<bool> {
    let dev = Device::cuda(0)?;
    let be = cuda::backend_of(&dev)?;
    eprintln!("device: {}", be.describe());
    let warmup = 5;
    let mut results = Vec::new();
    let mut all_ok = true;
    let mut cases = cases(&dev, quick)?;
    if let Some(only) = only {
        cases.retain(|c| c.name.contains(only));
    }
    // The cases, then the graph, crossover, separate-matmuls and streams
    // tables; with `only`, a table runs when its name contains it.
    let table = |name: &str| only.is_none_or(|o| name.contains(o));
    let tables = [
        "graph_1000_small_kernels",
        "crossover",
        "matmuls_vs_bmm",
        "streams",
    ]
    .iter()
    .filter(|n| table(n))
    .count();
    let progress = Progress::new("cuda", cases.len() + tables);
    for case in cases {
        progress.start(&case.name);
        cuda::set_matmul_precision(case.precision);
        let limits = if case.unfused {
            limits_for(dev)?.unfused()
        } else {
            limits_for(dev)?
        };
        let run = || -> Result<Tensor> {
            let t = (case.build)()?;
            realize_with(std::slice::from_ref(&t), &limits)?;
            Ok(t)
        };
        let st = time(warmup, case.reps, || {
            run()?;
            synchronize(dev)
        })?;
        let o = run()?;
        let chk = (case.verify)(&o)?;
        drop(o);
        cuda::set_matmul_precision(Precision::Highest);
        all_ok &= chk.ok;
        let t = st.median_s;
        progress.line(&format!(
            "{:<28} {:>9.3} ms (p10 {:.3}, p90 {:.3})  {:>8.1} TFLOP/s {:>7.0} GB/s  err {:.1e} {}",
            case.name,
            t * 1e3,
            st.p10_s * 1e3,
            st.p90_s * 1e3,
            case.flops / t / 1e12,
            case.bytes / t / 1e9,
            chk.max_err_rel_to_max,
            if chk.ok { "ok" } else { "FAILED" }
        ));
        progress.done();
        results.push(json!({
            "name": case.name,
            "what": case.what,
            "stats": st,
            "flops": case.flops,
            "bytes": case.bytes,
            "tflops": case.flops / t / 1e12,
            "gbps": case.bytes / t / 1e9,
            "check": chk,
        }));
    }
    let (mut g, mut crossover, mut separate, mut streams) = (None, None, None, None);
    if table("graph_1000_small_kernels") {
        progress.start("eager dispatch and CUDA graph");
        let (v, ok) = progress.around(|| dispatch_and_graph(&dev, quick))?;
        (g, all_ok) = (Some(v), all_ok && ok);
    }
    if table("crossover") {
        progress.start("CPU/GPU crossover");
        let (v, ok) = progress.around(|| bench_crossover::crossover(&dev, quick))?;
        (crossover, all_ok) = (Some(v), all_ok && ok);
    }
    if table("matmuls_vs_bmm") {
        progress.start("separate matmuls vs bmm");
        let (v, ok) = progress.around(|| bench_crossover::matmuls_vs_bmm(&dev, quick))?;
        (separate, all_ok) = (Some(v), all_ok && ok);
    }
    if table("streams") {
        progress.start("streams");
        let (v, ok) = progress.around(|| bench_streams::streams(&dev, quick))?;
        (streams, all_ok) = (Some(v), all_ok && ok);
    }
    progress.finish();
    let (compiles, disk_hits) = cuda::nvrtc::compile_stats();
    let doc = json!({
        "suite": "cuda",
        "quick": quick,
        "only": only,
        "timing": format!("end-to-end: build the lazy graph, realize, synchronize; {warmup} warm-ups, then the reps listed; median, p10, p90"),
        "device": be.describe(),
        "nvrtc": { "compiles": compiles, "disk_cache_hits": disk_hits, "cache_dir": cuda::nvrtc::cache_dir().map(|p| p.display().to_string()) },
        "cases": results,
        "graph": g,
        "crossover": crossover,
        "matmuls_vs_bmm": separate,
        "streams": streams,
    });
    let io = |e: std::io::Error| Error::Backend {
        op: "bench",
        message: format!("{}: {e}", out.display()),
    };
    if let Some(p) = out.parent() {
        std::fs::create_dir_all(p).map_err(io)?;
    }
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Backend {
        op: "bench",
        message: e.to_string(),
    })?;
    std::fs::write(out, text).map_err(io)?;
    Ok(all_ok)
}
