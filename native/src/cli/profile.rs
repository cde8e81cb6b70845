//! `fusegraph profile`: the kernel profiler on the demo graphs. Each graph is
//! realized `reps` times (after 2 warm-up runs) inside a
//! `fusegraph_core::profile::Scope`, which times every kernel the CPU backend
//! launches; the table lists them by total time with FLOPs, bytes, arithmetic
//! intensity and the fraction of the roofline.

use std::path::Path;

use fusegraph_core::codegen::kernel_hash;
use fusegraph_core::profile::{Report, Roofline, Scope};
use fusegraph_core::runtime::{compiled_for, realize_with};
use fusegraph_core::{Error, Limits, Result};

use super::demo::demo_cases;

pub fn run(reps: usize, unfused: bool, small: bool, trace: Option<&Path>) -> Result<()> {
    let limits = if unfused {
        Limits::cpu().unfused()
    } else {
        Limits::cpu()
    };
    let roofline = Roofline::measure_cpu();
    println!(
        "fusegraph profile ({} schedule): every kernel of {reps} realizations per graph, after 2 warm-up runs",
        if unfused { "unfused" } else { "fused" }
    );
    println!("roofline = max(FLOPs / peak FLOP/s, bytes / memory bandwidth) / time; bytes count each input element once plus the output\n");
    let mut all = Report::default();
    for case in demo_cases(small)? {
        for _ in 0..2 {
            realize_with(&[(case.build)()?], &limits)?;
        }
        let scope = Scope::start();
        let runs = (0..reps).try_for_each(|_| realize_with(&[(case.build)()?], &limits));
        let report = scope.finish();
        runs?;
        println!("== {} ==", case.name);
        print!("{}", report.table(roofline));
        let compiled = compiled_for(&[(case.build)()?], &limits)?;
        for step in &compiled.schedule.steps {
            let k = &step.kernel;
            let shape: Vec<String> = k.out_shape.iter().map(|d| d.to_string()).collect();
            println!(
                "  fg_{}_{:016x}: output {}",
                k.kind(),
                kernel_hash(k),
                if shape.is_empty() {
                    "scalar".to_string()
                } else {
                    shape.join("x")
                }
            );
        }
        println!();
        all.records.extend(report.records);
    }
    if let Some(path) = trace {
        all.write_chrome_trace(path).map_err(|e| Error::Backend {
            op: "profile",
            message: format!("cannot write the trace to {}: {e}", path.display()),
        })?;
        println!(
            "trace: {} kernel launches written to {} (open it in Perfetto or chrome://tracing)",
            all.records.len(),
            path.display()
        );
    }
    Ok(())
}
