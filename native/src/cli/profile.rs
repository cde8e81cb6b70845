//! `fusegraph profile`: per-kernel time, FLOPs, bytes and arithmetic
//! intensity of the demo graphs. Each kernel of the schedule is run on its own
//! with `run_kernel` (inputs computed by the earlier steps), so the time is the
//! kernel's alone: no graph build, cache lookup or output hand-off.

use std::sync::Arc;
use std::time::Instant;

use fusegraph_core::backend::cpu::exec::run_kernel;
use fusegraph_core::backend::cpu::CpuStorage;
use fusegraph_core::graph::build::build_graph;
use fusegraph_core::runtime::compile;
use fusegraph_core::schedule::BufRef;
use fusegraph_core::{Error, Limits, Result};

use super::demo::demo_cases;
use super::measure::{machine, memcpy_gbps, roofline_fraction, stats_of};

pub fn run(reps: usize, unfused: bool, small: bool) -> Result<()> {
    let limits = if unfused {
        Limits::cpu().unfused()
    } else {
        Limits::cpu()
    };
    let m = machine();
    let bw = memcpy_gbps();
    println!("fusegraph profile ({} schedule): each kernel run alone, median of {reps} runs after 2 warm-up runs", if unfused { "unfused" } else { "fused" });
    println!(
        "roofline: memcpy {bw:.1} GB/s (measured now), peak {:.0} GFLOP/s ({})\n",
        m.peak_gflops_estimate, m.peak_assumption
    );
    println!(
        "{:<20} {:>3} {:<8} {:>14} {:>10} {:>12} {:>12} {:>8} {:>9} {:>8} {:>9}",
        "graph",
        "#",
        "kind",
        "output",
        "time µs",
        "FLOPs",
        "bytes",
        "FLOP/B",
        "GFLOP/s",
        "GB/s",
        "roofline"
    );
    let missing = || Error::Backend {
        op: "profile",
        message: "a kernel argument was not computed".into(),
    };
    for case in demo_cases(small)? {
        let t = (case.build)()?;
        let built = build_graph(std::slice::from_ref(t.node()));
        let compiled = compile(built.graph, &limits)?;
        let leaves: Vec<Arc<CpuStorage>> = built.leaf_storage;
        let mut slots: Vec<Option<CpuStorage>> = vec![None; compiled.schedule.plan.slots.len()];
        let mut total = 0.0;
        for (i, step) in compiled.schedule.steps.iter().enumerate() {
            let k = &step.kernel;
            let mut out = CpuStorage::zeros(k.out_dtype, k.out_numel());
            let mut times = Vec::with_capacity(reps);
            {
                let args: Vec<&CpuStorage> = step
                    .args
                    .iter()
                    .map(|a| match a {
                        BufRef::Leaf(l) => leaves.get(*l).map(|x| x.as_ref()),
                        BufRef::Slot(s) => slots.get(*s).and_then(|x| x.as_ref()),
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(missing)?;
                for rep in 0..reps + 2 {
                    let start = Instant::now();
                    run_kernel(k, &args, &mut out)?;
                    if rep >= 2 {
                        times.push(start.elapsed().as_secs_f64());
                    }
                }
            }
            slots[step.out] = Some(out);
            let s = stats_of(2, times).median_s;
            total += s;
            let shape: Vec<String> = k.out_shape.iter().map(|d| d.to_string()).collect();
            println!(
                "{:<20} {:>3} {:<8} {:>14} {:>10.1} {:>12} {:>12} {:>8.2} {:>9.2} {:>8.2} {:>8.1}%",
                if i == 0 { case.name } else { "" },
                i,
                k.kind(),
                if shape.is_empty() {
                    "scalar".to_string()
                } else {
                    shape.join("x")
                },
                s * 1e6,
                k.flops(),
                k.bytes(),
                k.flops() as f64 / k.bytes().max(1) as f64,
                k.flops() as f64 / s / 1e9,
                k.bytes() as f64 / s / 1e9,
                100.0 * roofline_fraction(k.flops(), k.bytes(), s, m.peak_gflops_estimate, bw)
            );
        }
        println!(
            "{:<20} {:>3} {:<8} {:>14} {:>10.1}",
            "",
            "",
            "total",
            "",
            total * 1e6
        );
    }
    println!("\nroofline = max(FLOPs / peak, bytes / memcpy bandwidth) / time. Bytes count each input element once plus the output.");
    Ok(())
}
