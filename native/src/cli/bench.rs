//! `fusegraph bench --suite cpu`: the CPU benchmark suite. Each case is timed
//! end to end as a user calls it (build the lazy ops, `realize`: graph build,
//! cache lookup, kernels, output allocation), checked against the f64
//! reference in the same run, and written as JSON for `bench/run_cpu.sh`.

use std::path::Path;
use std::time::Instant;

use fusegraph_core::backend::cpu::exec::execute;
use fusegraph_core::codegen::{render, RenderOptions};
use fusegraph_core::graph::build::build_graph;
use fusegraph_core::runtime::{cache_stats, compile, compiled_for, realize_with};
use fusegraph_core::schedule::Body;
use fusegraph_core::{Error, Limits, Result, Tensor};
use serde_json::{json, Value};

use super::bench_decomp;
use super::measure::{
    chain10, check, check_scaled, checksum, cost, full_reductions, input, machine, memcpy_gbps,
    roofline_fraction, stats_of, time, Check, Stats,
};
use super::progress::Progress;

type Build = Box<dyn Fn() -> Result<Tensor>>;
type Verify = Box<dyn Fn(&Tensor) -> Result<Check>>;

struct Case {
    name: &'static str,
    what: String,
    reps: usize,
    build: Build,
    verify: Verify,
    /// What the cross-check with NumPy divides the checksum difference by
    /// (default: the sum of the result's magnitudes).
    checksum_scale: Option<f64>,
    /// Realize with fusion off (every op its own kernel), to price fusion.
    unfused: bool,
}

/// Relative tolerance (to the largest reference magnitude) for f32 results.
const TOL: f64 = 1e-4;

fn matmul_case(n: usize, reps: usize) -> Result<Case> {
    let (a, b) = (input(&[n, n], 11)?, input(&[n, n], 12)?);
    let (a2, b2) = (a.clone(), b.clone());
    Ok(Case {
        name: leak(format!("matmul_{n}")),
        what: format!("f32 matmul {n}x{n} @ {n}x{n}"),
        reps,
        checksum_scale: None,
        unfused: false,
        build: Box::new(move || a.matmul(&b)),
        // Rows 0..8 of the product against the reference of a[0..8] @ b.
        verify: Box::new(move |out| {
            check(
                &out.narrow(0, 0, 8)?,
                &a2.narrow(0, 0, 8)?.matmul(&b2)?,
                TOL,
            )
        }),
    })
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn cases(quick: bool) -> Result<Vec<Case>> {
    let r = |full: usize| if quick { (full / 10).max(3) } else { full };
    let mut v = vec![
        matmul_case(512, r(100))?,
        matmul_case(1024, r(100))?,
        matmul_case(2048, r(20))?,
        matmul_case(4096, r(10))?,
    ];

    let n = 16 << 20;
    let (a, b, c) = (input(&[n], 1)?, input(&[n], 2)?, input(&[n], 3)?);
    let (a2, b2, c2) = (a.clone(), b.clone(), c.clone());
    v.push(Case {
        name: "fused_mul_add_relu_16m",
        what: "relu(a*b+c), a, b, c: 16M f32 (one fused kernel)".into(),
        reps: r(100),
        checksum_scale: None,
        unfused: false,
        build: Box::new(move || a.mul(&b)?.add(&c)?.relu()),
        verify: Box::new(move |out| {
            let k = 1 << 16;
            check(
                &out.narrow(0, 0, k)?,
                &a2.narrow(0, 0, k)?
                    .mul(&b2.narrow(0, 0, k)?)?
                    .add(&c2.narrow(0, 0, k)?)?
                    .relu()?,
                TOL,
            )
        }),
    });

    // The same 10-op chain as the per-call overhead case, on 16M f32: one
    // fused kernel, then every op as its own kernel (fusion off), which is
    // what an eager library runs (NumPy makes a temporary per op).
    for unfused in [false, true] {
        let s = input(&[n], 7)?;
        let s2 = s.clone();
        v.push(Case {
            name: if unfused {
                "chain_10op_16m_unfused"
            } else {
                "chain_10op_16m_fused"
            },
            what: format!(
                "10-op elementwise chain (x*1.01+s, 5 times) on 16M f32, {}",
                if unfused {
                    "fusion off: 10 kernels"
                } else {
                    "fused: 1 kernel"
                }
            ),
            reps: r(30),
            checksum_scale: None,
            unfused,
            build: Box::new(move || chain10(&s)),
            verify: Box::new(move |out| {
                let k = 1 << 16;
                check(&out.narrow(0, 0, k)?, &chain10(&s2.narrow(0, 0, k)?)?, TOL)
            }),
        });
    }

    for (name, xs, rs, reps) in [
        (
            "bcast_1024x1024_plus_1024",
            vec![1024, 1024],
            vec![1024],
            r(100),
        ),
        (
            "bcast_1024x1024x3_plus_3",
            vec![1024, 1024, 3],
            vec![3],
            r(100),
        ),
        (
            "bcast_64x1024x1024_plus_64x1x1",
            vec![64, 1024, 1024],
            vec![64, 1, 1],
            r(30),
        ),
    ] {
        let (x, y) = (input(&xs, 4)?, input(&rs, 5)?);
        let (x2, y2) = (x.clone(), y.clone());
        let big = xs[0] == 64;
        v.push(Case {
            name,
            what: format!("broadcast add {xs:?} + {rs:?}, f32"),
            reps,
            checksum_scale: None,
            unfused: false,
            build: Box::new(move || x.add(&y)),
            verify: Box::new(move |out| {
                if big {
                    // The first 2 of 64 planes (each reads its own scalar).
                    check(
                        &out.narrow(0, 0, 2)?,
                        &x2.narrow(0, 0, 2)?.add(&y2.narrow(0, 0, 2)?)?,
                        TOL,
                    )
                } else {
                    check(out, &x2.add(&y2)?, TOL)
                }
            }),
        });
    }

    let x = input(&[1024, 1024], 6)?;
    for (op, f, scale) in full_reductions(&x)? {
        let (x, x2) = (x.clone(), x.clone());
        v.push(Case {
            name: leak(format!("{op}_1024x1024")),
            what: format!("{op} of all elements of 1024x1024 f32"),
            reps: r(100),
            build: Box::new(move || f(&x)),
            verify: Box::new(move |out| check_scaled(out, &f(&x2)?, scale, 1e-5)),
            checksum_scale: scale,
            unfused: false,
        });
    }

    // A transposed view as the right operand: the kernel must read it through strides.
    let (a, bt) = (input(&[1024, 1024], 13)?, input(&[1024, 1024], 14)?);
    let (a2, bt2) = (a.clone(), bt.clone());
    v.push(Case {
        name: "matmul_1024_transposed_rhs",
        what: "f32 matmul 1024x1024 @ (1024x1024).t() (a strided view, no copy)".into(),
        reps: r(100),
        checksum_scale: None,
        unfused: false,
        build: Box::new(move || a.matmul(&bt.t()?)),
        verify: Box::new(move |out| {
            check(
                &out.narrow(0, 0, 8)?,
                &a2.narrow(0, 0, 8)?.matmul(&bt2.t()?)?,
                TOL,
            )
        }),
    });
    // The same product with the transpose made physical first: a copy
    // kernel realized on its own, then the matmul on the copy. Against the
    // row above it prices the copy that the strided view saves.
    let (a, bt) = (input(&[1024, 1024], 13)?, input(&[1024, 1024], 14)?);
    let (a2, bt2) = (a.clone(), bt.clone());
    v.push(Case {
        name: "matmul_1024_copied_rhs",
        what: "f32 matmul 1024x1024 @ (1024x1024).t().contiguous() (the copy realized first)"
            .into(),
        reps: r(100),
        checksum_scale: None,
        unfused: false,
        build: Box::new(move || {
            let copied = bt.t()?.contiguous()?;
            copied.realize()?;
            a.matmul(&copied)
        }),
        verify: Box::new(move |out| {
            check(
                &out.narrow(0, 0, 8)?,
                &a2.narrow(0, 0, 8)?.matmul(&bt2.t()?)?,
                TOL,
            )
        }),
    });
    // 1000 small products in one batched call (bmm).
    let (a, b) = (input(&[1000, 128, 128], 15)?, input(&[1000, 128, 128], 16)?);
    let (a2, b2) = (a.clone(), b.clone());
    v.push(Case {
        name: "bmm_1000x128x128",
        what: "f32 batched matmul of 1000 128x128 pairs in one call".into(),
        reps: r(50),
        checksum_scale: None,
        unfused: false,
        build: Box::new(move || a.matmul(&b)),
        // Batches 0..4 against their own reference products.
        verify: Box::new(move |out| {
            check(
                &out.narrow(0, 0, 4)?,
                &a2.narrow(0, 0, 4)?.matmul(&b2.narrow(0, 0, 4)?)?,
                TOL,
            )
        }),
    });
    v.extend(decomp_cases(r)?);
    Ok(v)
}

/// SVD, QR and Cholesky of 512×512 f32. The build closure runs the
/// factorization (decompositions are eager); the check factors again and
/// reconstructs.
fn decomp_cases(r: impl Fn(usize) -> usize) -> Result<Vec<Case>> {
    let n = 512;
    let a = bench_decomp::decomp_input(n, 31)?;
    let spd = bench_decomp::spd_input(n, 32)?;
    let (a1, a2, a3, a4, s1) = (a.clone(), a.clone(), a.clone(), a.clone(), spd.clone());
    Ok(vec![
        Case {
            name: "svd_512",
            what: "thin SVD (U, S, Vt) of 512x512 f32".into(),
            reps: r(20),
            checksum_scale: None,
            unfused: false,
            build: Box::new(move || a1.svd().map(|(_, s, _)| s)),
            verify: Box::new(move |_| bench_decomp::check_svd(&a2)),
        },
        Case {
            name: "qr_512",
            what: "reduced QR (Q, R) of 512x512 f32, then |R| (row signs of R are not unique)"
                .into(),
            reps: r(50),
            checksum_scale: None,
            unfused: false,
            build: Box::new(move || a3.qr()?.1.abs()),
            verify: Box::new(move |_| bench_decomp::check_qr(&a4)),
        },
        Case {
            name: "cholesky_512",
            what: "Cholesky L of a 512x512 f32 SPD matrix".into(),
            reps: r(100),
            checksum_scale: None,
            unfused: false,
            build: Box::new(move || spd.cholesky()),
            verify: Box::new(move |_| bench_decomp::check_cholesky(&s1)),
        },
    ])
}

/// Asserts that the transposed operand reaches the matmul kernel as a strided view.
fn assert_no_copy(t: &Tensor) -> Result<Value> {
    let c = compiled_for(std::slice::from_ref(t), &Limits::cpu())?;
    let steps = &c.schedule.steps;
    let fail = |m: String| Error::Backend {
        op: "bench",
        message: m,
    };
    if steps.len() != 1 {
        return Err(fail(format!(
            "transposed matmul ran {} kernels, expected 1 (a copy was added)",
            steps.len()
        )));
    }
    match &steps[0].kernel.body {
        Body::Matmul(mm) if !mm.b.is_contiguous() => Ok(json!({
            "kernels": 1,
            "rhs_contiguous": false,
            "rhs_strides": mm.b.strides,
        })),
        Body::Matmul(_) => Err(fail(
            "the transposed operand reached the kernel contiguous: it was copied".into(),
        )),
        _ => Err(fail(format!(
            "expected a matmul kernel, got {}",
            steps[0].kernel.kind()
        ))),
    }
}

fn stats_json(s: &Stats) -> Value {
    json!({ "warmup": s.warmup, "reps": s.reps, "median_s": s.median_s, "p10_s": s.p10_s, "p90_s": s.p90_s, "min_s": s.min_s })
}

/// Compile-time and cache-hit overhead of the tiny 10-op chain.
fn overhead_cases(quick: bool, warmup: usize) -> Result<Vec<Value>> {
    let reps = if quick { 100 } else { 1000 };
    let s = input(&[8], 21)?;
    let limits = Limits::cpu();

    // First time: build the graph, run the passes and the scheduler, render
    // every kernel to WGSL. Calls `compile` directly, so no cache is involved.
    let (mut tb, mut tc, mut tr, mut tt) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut kernels = 0;
    for i in 0..warmup + reps {
        let y = chain10(&s)?;
        let t0 = Instant::now();
        let built = build_graph(std::slice::from_ref(y.node()));
        let t1 = Instant::now();
        let compiled = compile(built.graph, &limits)?;
        let t2 = Instant::now();
        for step in &compiled.schedule.steps {
            std::hint::black_box(render(&step.kernel, &RenderOptions::wgsl())?);
        }
        let t3 = Instant::now();
        kernels = compiled.schedule.steps.len();
        if i >= warmup {
            tb.push((t1 - t0).as_secs_f64());
            tc.push((t2 - t1).as_secs_f64());
            tr.push((t3 - t2).as_secs_f64());
            tt.push((t3 - t0).as_secs_f64());
        }
    }
    let total = stats_of(warmup, tt);
    let (b, c, r) = (
        stats_of(warmup, tb),
        stats_of(warmup, tc),
        stats_of(warmup, tr),
    );
    let first = json!({
        "name": "compile_10op_chain",
        "what": "first compile of a 10-op elementwise chain on 8 f32: build_graph + passes + schedule + WGSL codegen (no cache)",
        "stats": stats_json(&total),
        "median_us": total.median_s * 1e6,
        "phases_median_us": { "build_graph": b.median_s * 1e6, "passes_and_schedule": c.median_s * 1e6, "codegen_wgsl": r.median_s * 1e6 },
        "kernels": kernels,
        "check": { "ok": kernels == 1, "what": "the chain fuses into 1 kernel" },
    });

    // Second run of the same graph shape: a cache hit. Overhead = realize - kernel time.
    let (h0, m0) = cache_stats();
    let e2e = time(warmup, reps, || chain10(&s)?.realize().map(|_| ()))?;
    // Realize alone: the chain is built outside the timed region, so this is
    // walk + cache check + execution + recording the result.
    let mut realize_only = Vec::with_capacity(reps);
    for i in 0..warmup + reps {
        let y = chain10(&s)?;
        let t = std::time::Instant::now();
        y.realize()?;
        if i >= warmup {
            realize_only.push(t.elapsed().as_secs_f64());
        }
    }
    let realize_only = stats_of(warmup, realize_only);
    let lookup = time(warmup, reps, || {
        compiled_for(&[chain10(&s)?], &limits).map(|_| ())
    })?;
    let (h1, m1) = cache_stats();
    let y = chain10(&s)?;
    let built = build_graph(std::slice::from_ref(y.node()));
    let compiled = compiled_for(std::slice::from_ref(&y), &limits)?;
    let kernel = time(warmup, reps, || {
        execute(&compiled.schedule, &built.leaf_storage).map(|_| ())
    })?;
    let out = chain10(&s)?;
    out.realize()?;
    let chk = check(&out, &chain10(&s)?, TOL)?;
    let cs = checksum(&out)?;
    let cached = json!({
        "name": "cached_10op_chain",
        "what": "realize of the same 10-op chain shape again (schedule cache hit), 8 f32",
        "stats": stats_json(&e2e),
        "median_us": e2e.median_s * 1e6,
        "kernel_median_us": kernel.median_s * 1e6,
        "overhead_median_us": (e2e.median_s - kernel.median_s) * 1e6,
        "realize_only_median_us": realize_only.median_s * 1e6,
        "realize_overhead_median_us": (realize_only.median_s - kernel.median_s) * 1e6,
        "overhead_note": "median_us and overhead_median_us include building the 10 lazy ops (as NumPy's time includes its 10 calls); realize_overhead_median_us is realize alone minus the kernel",
        "build_graph_and_lookup_median_us": lookup.median_s * 1e6,
        "cache_hits_during_case": h1 - h0,
        "cache_misses_during_case": m1 - m0,
        "kernels": compiled.schedule.steps.len(),
        "check": chk,
        "checksum": { "sum": cs.0, "abs_sum": cs.1 },
    });
    Ok(vec![first, cached])
}

pub fn run(suite: &str, out: &Path, quick: bool) -> Result<bool> {
    if suite != "cpu" {
        return Err(Error::InvalidArgument {
            op: "bench",
            what: "--suite",
            expected: "cpu",
            got: suite.to_string(),
        });
    }
    let warmup = if quick { 2 } else { 5 };
    let load_start = loadavg();
    let m = machine();
    eprintln!("measuring memcpy bandwidth ...");
    let bw = memcpy_gbps();
    eprintln!(
        "memcpy: {bw:.1} GB/s (read + write); peak estimate {:.0} GFLOP/s",
        m.peak_gflops_estimate
    );
    let mut results = Vec::new();
    let mut all_ok = true;
    let cases = cases(quick)?;
    let progress = Progress::new(suite, cases.len() + 1);
    for case in cases {
        progress.start(case.name);
        let limits = if case.unfused {
            Limits::cpu().unfused()
        } else {
            Limits::cpu()
        };
        let probe = (case.build)()?;
        let fused = cost(&probe, &limits)?;
        let unfused = cost(&probe, &Limits::cpu().unfused())?;
        let extra = if case.name == "matmul_1024_transposed_rhs" {
            assert_no_copy(&probe)?
        } else {
            json!({})
        };
        let run = || -> Result<Tensor> {
            let t = (case.build)()?;
            realize_with(std::slice::from_ref(&t), &limits)?;
            Ok(t)
        };
        let st = time(warmup, case.reps, || run().map(|_| ()))?;
        let out = run()?;
        let chk = (case.verify)(&out)?;
        let cs = checksum(&out)?;
        all_ok &= chk.ok;
        let t = st.median_s;
        progress.line(&format!(
            "{:<32} {:>10.3} ms  (p10 {:.3}, p90 {:.3}, {} reps)  {:>7.2} GFLOP/s {:>7.2} GB/s  err {:.1e} {}",
            case.name,
            t * 1e3,
            st.p10_s * 1e3,
            st.p90_s * 1e3,
            st.reps,
            fused.flops as f64 / t / 1e9,
            fused.bytes as f64 / t / 1e9,
            chk.max_err_rel_to_max,
            if chk.ok { "ok" } else { "FAILED" }
        ));
        progress.done();
        results.push(json!({
            "name": case.name,
            "what": case.what,
            "stats": stats_json(&st),
            "kernels": fused.kernels,
            "kernels_unfused": unfused.kernels,
            "flops": fused.flops,
            "bytes": fused.bytes,
            "gflops": fused.flops as f64 / t / 1e9,
            "gbps": fused.bytes as f64 / t / 1e9,
            "roofline_fraction": roofline_fraction(fused.flops, fused.bytes, t, m.peak_gflops_estimate, bw),
            "check": chk,
            "checksum": { "sum": cs.0, "abs_sum": cs.1, "scale": case.checksum_scale.unwrap_or(cs.1) },
            "extra": extra,
        }));
    }
    progress.start("per-graph overhead");
    for c in overhead_cases(quick, warmup)? {
        progress.line(&format!(
            "{:<32} {:>10.2} µs",
            c["name"].as_str().unwrap_or("?"),
            c["median_us"].as_f64().unwrap_or(f64::NAN)
        ));
        all_ok &= c["check"]["ok"].as_bool().unwrap_or(false);
        results.push(c);
    }
    progress.done();
    progress.finish();
    let doc = json!({
        "suite": suite,
        "quick": quick,
        "timing": format!("end-to-end realize of a freshly built lazy graph per rep; {warmup} warm-up runs, then the reps listed per case; median, p10, p90"),
        "threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "memcpy_gbps": bw,
        "memcpy_method": "copy_from_slice of 256 MiB f32, best of 1 thread and all threads, bytes read + written",
        "machine": m,
        "loadavg_start": load_start,
        "loadavg_end": loadavg(),
        "cases": results,
    });
    if let Some(dir) = out.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(|e| io_err(out, e))?;
        }
    }
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Backend {
        op: "bench",
        message: e.to_string(),
    })?;
    std::fs::write(out, text + "\n").map_err(|e| io_err(out, e))?;
    eprintln!("wrote {}", out.display());
    Ok(all_ok)
}

/// The 1, 5 and 15 minute load averages (other work on the machine skews timings).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::Backend {
        op: "bench",
        message: format!("{}: {e}", path.display()),
    }
}
