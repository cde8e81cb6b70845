//! `fusegraph demo`: a few fused graphs on the CPU, their kernel counts
//! before and after fusion, timings, and a check against the f64 reference.

use fusegraph_core::runtime::realize_with;
use fusegraph_core::{Limits, Result, Tensor};

use super::measure::{check, cost, input, time};

/// One demo graph: inputs are realized once, `build` records the lazy ops.
pub struct DemoCase {
    pub name: &'static str,
    pub build: Box<dyn Fn() -> Result<Tensor>>,
}

/// The demo graphs, at full size or (for tests) small.
pub fn demo_cases(small: bool) -> Result<Vec<DemoCase>> {
    let n = if small { 1 << 12 } else { 4 << 20 };
    let rows = if small { 64 } else { 1024 };
    let mm = if small { 64 } else { 512 };
    let (a, b, c) = (input(&[n], 1)?, input(&[n], 2)?, input(&[n], 3)?);
    let x = input(&[rows, rows], 4)?;
    let (w, bias) = (input(&[rows], 5)?, input(&[rows], 6)?);
    let (p, q, pb) = (input(&[mm, mm], 7)?, input(&[mm, mm], 8)?, input(&[mm], 9)?);
    let x2 = x.clone();
    Ok(vec![
        DemoCase {
            name: "relu(a*b+c)",
            build: Box::new(move || a.mul(&b)?.add(&c)?.relu()),
        },
        DemoCase {
            name: "softmax(x, -1)",
            build: Box::new(move || x.softmax(-1)),
        },
        DemoCase {
            name: "layer_norm(x)*w+b",
            build: Box::new(move || x2.layer_norm(1, Some(&w), Some(&bias), 1e-5)),
        },
        DemoCase {
            name: "relu(p@q+bias)",
            build: Box::new(move || p.matmul(&q)?.add(&pb)?.relu()),
        },
    ])
}

fn shape_of(t: &Tensor) -> String {
    let dims: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
    dims.join("x")
}

pub fn run(reps: usize, small: bool) -> Result<bool> {
    let cases = demo_cases(small)?;
    let fused = Limits::cpu();
    let unfused = Limits::cpu().unfused();
    println!("fusegraph demo: lazy graphs on the CPU fast path, fused vs one kernel per op");
    println!("timings: median of {reps} runs after 3 warm-up runs; every result is checked against the f64 reference\n");
    println!(
        "{:<20} {:>12} {:>9} {:>11} {:>11} {:>8} {:>9} {:>8} {:>10} {:>5}",
        "graph",
        "output",
        "kernels",
        "unfused ms",
        "fused ms",
        "speedup",
        "GFLOP/s",
        "GB/s",
        "max err",
        "ok"
    );
    let mut all_ok = true;
    for case in &cases {
        let probe = (case.build)()?;
        let before = cost(&probe, &unfused)?;
        let after = cost(&probe, &fused)?;
        let t_unfused = time(3, reps, || realize_with(&[(case.build)()?], &unfused))?;
        let t_fused = time(3, reps, || realize_with(&[(case.build)()?], &fused))?;
        // Check the fused result (the one users get) against the reference.
        let out = (case.build)()?;
        out.realize()?;
        // A fresh lazy graph of the same ops: the reference evaluates it op by op in f64.
        let chk = check(&out, &(case.build)()?, 1e-4)?;
        all_ok &= chk.ok;
        let s = t_fused.median_s;
        println!(
            "{:<20} {:>12} {:>4} → {:<2} {:>11.3} {:>11.3} {:>7.1}x {:>9.2} {:>8.2} {:>10.2e} {:>5}",
            case.name,
            shape_of(&out),
            before.kernels,
            after.kernels,
            t_unfused.median_s * 1e3,
            s * 1e3,
            t_unfused.median_s / s,
            after.flops as f64 / s / 1e9,
            after.bytes as f64 / s / 1e9,
            chk.max_err_rel_to_max,
            if chk.ok { "yes" } else { "NO" }
        );
    }
    println!("\nkernels: before → after fusion. GFLOP/s and GB/s use the fused kernels' own FLOP and byte counts.");
    println!(
        "max err: max |fast - reference| / max |reference| over the whole output (tolerance 1e-4)."
    );
    println!("Try FUSEGRAPH_DEBUG=graph,kernels to print the graph before/after the passes and every kernel.");
    Ok(all_ok)
}
