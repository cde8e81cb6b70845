//! The `fusegraph` command line: `demo` (the default), `bench`, `profile`, `image`.

pub mod bench;
#[cfg(feature = "cuda")]
pub mod bench_crossover;
#[cfg(feature = "cuda")]
pub mod bench_cuda;
pub mod bench_decomp;
#[cfg(feature = "cuda")]
pub mod bench_streams;
#[cfg(feature = "wgpu")]
pub mod bench_wgpu;
pub mod demo;
pub mod image;
pub mod measure;
pub mod profile;
pub mod progress;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Fused tensor compute: run the demo, the benchmark suite or the profiler.
#[derive(Debug, Parser)]
#[command(name = "fusegraph", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build a few fused graphs on the CPU, compare kernel counts and timings
    /// with fusion off, and check every result against the f64 reference.
    Demo {
        /// Timed runs per graph (after 3 warm-up runs).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        reps: u32,
        /// Small inputs (a quick smoke run).
        #[arg(long)]
        small: bool,
    },
    /// Run a benchmark suite and write its results as JSON.
    Bench {
        /// The suite to run.
        #[arg(long, value_enum, default_value_t = Suite::Cpu)]
        suite: Suite,
        /// Where the JSON goes.
        #[arg(long, default_value = "bench/results/cpu.json")]
        out: PathBuf,
        /// About a tenth of the repetitions (for a smoke run; numbers are noisier).
        #[arg(long)]
        quick: bool,
        /// CUDA suite: only the cases whose name contains this text, and none
        /// of the tables after them (dispatch, crossover, bmm, streams).
        #[arg(long)]
        only: Option<String>,
    },
    /// Resize, filter and re-encode an image: `fusegraph image in.jpg -w 800
    /// --sharpen 0.5 -o out.webp` (the output format follows the extension).
    Image(Box<image::ImageArgs>),
    /// Per-kernel time, FLOPs, bytes and arithmetic intensity of the demo graphs.
    Profile {
        /// Realizations of each graph profiled (after 2 warm-up runs).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        reps: u32,
        /// Profile the one-kernel-per-op schedule instead of the fused one.
        #[arg(long)]
        unfused: bool,
        /// Small inputs (a quick smoke run).
        #[arg(long)]
        small: bool,
        /// Also write every kernel launch as a Chrome/Perfetto trace JSON here.
        #[arg(long)]
        trace: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// CPU fast path: matmul, fused elementwise, broadcasts, reductions, overhead.
    Cpu,
    /// The wgpu backend (feature `wgpu`): matmul, fused elementwise, softmax,
    /// small-op overhead; JSON to bench/results/wgpu_fusegraph.json by default.
    #[cfg(feature = "wgpu")]
    Wgpu,
    /// The CUDA backend (feature `cuda`): cuBLASLt matmuls, fused elementwise,
    /// softmax, layer_norm, dispatch and graph replay; JSON to
    /// bench/results/cuda_fusegraph.json by default.
    #[cfg(feature = "cuda")]
    Cuda,
}

/// Runs the command; `Ok(false)` means a result failed its check.
pub fn run(cli: Cli) -> fusegraph_core::Result<bool> {
    match cli.command.unwrap_or(Command::Demo {
        reps: 20,
        small: false,
    }) {
        Command::Demo { reps, small } => demo::run(reps as usize, small),
        Command::Bench {
            suite,
            out,
            quick,
            only,
        } => {
            #[cfg(feature = "cuda")]
            let cuda = suite == Suite::Cuda;
            #[cfg(not(feature = "cuda"))]
            let cuda = false;
            if only.is_some() && !cuda {
                return Err(fusegraph_core::Error::InvalidArgument {
                    op: "bench",
                    what: "--only",
                    expected: "used with --suite cuda",
                    got: format!("--suite {suite:?}"),
                });
            }
            let name = match suite {
                Suite::Cpu => "cpu",
                #[cfg(feature = "wgpu")]
                Suite::Wgpu => {
                    let default = std::path::Path::new("bench/results/cpu.json");
                    let out = if out == default {
                        PathBuf::from("bench/results/wgpu_fusegraph.json")
                    } else {
                        out
                    };
                    return bench_wgpu::run(&out, quick);
                }
                #[cfg(feature = "cuda")]
                Suite::Cuda => {
                    let default = std::path::Path::new("bench/results/cpu.json");
                    let out = if out == default {
                        PathBuf::from("bench/results/cuda_fusegraph.json")
                    } else {
                        out
                    };
                    return bench_cuda::run(&out, quick, only.as_deref());
                }
            };
            bench::run(name, &out, quick)
        }
        Command::Profile {
            reps,
            unfused,
            small,
            trace,
        } => profile::run(reps as usize, unfused, small, trace.as_deref()).map(|()| true),
        Command::Image(args) => image::run(&args),
    }
}
