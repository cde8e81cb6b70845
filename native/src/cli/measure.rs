//! Timing, cost and accuracy helpers shared by `demo`, `bench` and `profile`.

use std::time::Instant;

use fusegraph_core::backend::cpu::reference::evaluate;
use fusegraph_core::runtime::compiled_for;
use fusegraph_core::{Device, Limits, Result, Tensor};

/// Median and spread of repeated timings, in seconds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Stats {
    pub warmup: usize,
    pub reps: usize,
    pub median_s: f64,
    pub p10_s: f64,
    pub p90_s: f64,
    pub min_s: f64,
}

/// Runs `f` `warmup` times untimed, then `reps` times timed.
pub fn time<F: FnMut() -> Result<()>>(warmup: usize, reps: usize, mut f: F) -> Result<Stats> {
    for _ in 0..warmup {
        f()?;
    }
    let reps = reps.max(1);
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed().as_secs_f64());
    }
    Ok(stats_of(warmup, v))
}

/// Summarises raw timings (seconds).
pub fn stats_of(warmup: usize, mut v: Vec<f64>) -> Stats {
    v.sort_by(f64::total_cmp);
    let q = |p: f64| -> f64 {
        if v.is_empty() {
            return f64::NAN;
        }
        let pos = p * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    };
    Stats {
        warmup,
        reps: v.len(),
        median_s: q(0.5),
        p10_s: q(0.1),
        p90_s: q(0.9),
        min_s: v.first().copied().unwrap_or(f64::NAN),
    }
}

/// Deterministic test data that NumPy reproduces bit for bit:
/// `x[i] = 2 * frac(i * 0.6180339887498949 + seed * 0.1) - 1`, computed in
/// f64 and rounded to f32 (one multiply, one add and `fract`, all exact IEEE).
pub fn fill(n: usize, seed: u64) -> Vec<f32> {
    let off = seed as f64 * 0.1;
    (0..n)
        .map(|i| ((i as f64 * 0.618_033_988_749_894_9 + off).fract() * 2.0 - 1.0) as f32)
        .collect()
}

/// Uniform values in [-1, 1) from splitmix64 of the element index and seed,
/// rounded to f32 (`bench/cpu_numpy.py` draws the same bits). Unlike
/// [`fill`], the matrices they make are unstructured and full rank, which
/// decompositions need.
pub fn noise(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64)
        .map(|i| {
            let mut z = (i ^ (seed << 32)).wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 11) as f64 * (1.0 / (1u64 << 53) as f64) * 2.0 - 1.0) as f32
        })
        .collect()
}

/// A realized f32 tensor of `shape` filled by [`fill`].
pub fn input(shape: &[usize], seed: u64) -> Result<Tensor> {
    let n = shape.iter().product();
    // Copied in through `from_slice`, so the data sits in a buffer the library
    // allocated (huge pages), as NumPy's arrays do on its side.
    Tensor::from_slice(&fill(n, seed), shape.to_vec(), &Device::Cpu)
}

/// What the compiled graph of `t` costs: kernel count, FLOPs and bytes (summed over kernels).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Cost {
    pub kernels: usize,
    pub flops: u64,
    pub bytes: u64,
}

pub fn cost(t: &Tensor, limits: &Limits) -> Result<Cost> {
    let c = compiled_for(std::slice::from_ref(t), limits)?;
    let steps = &c.schedule.steps;
    Ok(Cost {
        kernels: steps.len(),
        flops: steps.iter().map(|s| s.kernel.flops()).sum(),
        bytes: steps.iter().map(|s| s.kernel.bytes()).sum(),
    })
}

/// How far a result is from the f64 reference.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Check {
    /// Elements compared.
    pub compared: usize,
    pub max_abs_err: f64,
    /// `max_abs_err / max |reference|`.
    pub max_err_rel_to_max: f64,
    pub tolerance: f64,
    pub ok: bool,
}

/// Compares `fast` (already realized, f32) with the reference evaluation of `reference_of`.
/// `fast` and `reference_of` must have the same shape; for a sample, pass a
/// narrowed view of the result and the same graph built on narrowed inputs.
pub fn check(fast: &Tensor, reference_of: &Tensor, tolerance: f64) -> Result<Check> {
    check_scaled(fast, reference_of, None, tolerance)
}

/// As [`check`], with the error divided by `scale` instead of `max |reference|`
/// (for sums that cancel to near zero, pass the sum of magnitudes).
pub fn check_scaled(
    fast: &Tensor,
    reference_of: &Tensor,
    scale: Option<f64>,
    tolerance: f64,
) -> Result<Check> {
    let got = fast.to_vec_f64()?;
    let want = evaluate(reference_of)?;
    let mut max_abs = 0.0f64;
    let mut max_ref = 0.0f64;
    let mut finite = got.len() == want.len();
    for (g, w) in got.iter().zip(want.iter()) {
        if !g.is_finite() || !w.is_finite() {
            finite = false;
        }
        max_abs = max_abs.max((g - w).abs());
        max_ref = max_ref.max(w.abs());
    }
    let scale = scale.unwrap_or(max_ref);
    let rel = if scale > 0.0 {
        max_abs / scale
    } else {
        max_abs
    };
    Ok(Check {
        compared: got.len(),
        max_abs_err: max_abs,
        max_err_rel_to_max: rel,
        tolerance,
        ok: finite && rel <= tolerance,
    })
}

/// Sum and sum of magnitudes of a result in f64: a checksum NumPy can reproduce.
pub fn checksum(t: &Tensor) -> Result<(f64, f64)> {
    let v = t.to_vec_f64()?;
    Ok((v.iter().sum(), v.iter().map(|x| x.abs()).sum()))
}

/// Copy bandwidth of this machine in GB/s, counting bytes read plus bytes
/// written (the convention of `Kernel::bytes`): the best of a one-thread and
/// an all-threads `copy_from_slice` of 256 MiB, 5 timed copies each.
pub fn memcpy_gbps() -> f64 {
    let n = 64 << 20; // f32 elements: 256 MiB per buffer
    let src = vec![1.0f32; n];
    let mut dst = vec![0.0f32; n];
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mut best = 0.0f64;
    for t in [1, threads] {
        let chunk = n.div_ceil(t);
        let mut times = Vec::new();
        for rep in 0..7 {
            let start = Instant::now();
            std::thread::scope(|s| {
                for (d, sr) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                    s.spawn(move || d.copy_from_slice(sr));
                }
            });
            if rep >= 2 {
                times.push(start.elapsed().as_secs_f64());
            }
        }
        let st = stats_of(2, times);
        best = best.max(2.0 * (n * 4) as f64 / st.median_s / 1e9);
    }
    std::hint::black_box(&dst);
    best
}

/// What the machine is, as far as the roofline needs it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub ghz: f64,
    /// f32 FLOP per cycle per core assumed for the peak: 32 with AVX2 FMA, 64 with AVX-512.
    pub flop_per_cycle: u32,
    /// cores × GHz × 32 (AVX2), the convention.
    pub peak_gflops_avx2: f64,
    /// cores × GHz × `flop_per_cycle`: what the roofline fractions use.
    pub peak_gflops_estimate: f64,
    pub peak_assumption: &'static str,
}

pub fn machine() -> Machine {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
    };
    let cpu_model = field("model name").unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // Nominal clock from the model name ("@ 2.80GHz") when present, else the current MHz.
    let nominal = cpu_model
        .split('@')
        .nth(1)
        .and_then(|s| s.trim().trim_end_matches("GHz").trim().parse::<f64>().ok());
    let current = field("cpu MHz")
        .and_then(|s| s.parse::<f64>().ok())
        .map(|m| m / 1000.0);
    let ghz = nominal.or(current).unwrap_or(2.0);
    let avx512 = field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "avx512f"));
    let flop_per_cycle = if avx512 { 64 } else { 32 };
    Machine {
        cpu_model,
        cores,
        ghz,
        flop_per_cycle,
        peak_gflops_avx2: cores as f64 * ghz * 32.0,
        peak_gflops_estimate: cores as f64 * ghz * flop_per_cycle as f64,
        peak_assumption: "cores x GHz x FLOP/cycle, 2 FMA units x 2 FLOP x 8 f32 lanes (AVX2) = 32, or x 16 lanes (AVX-512, used when the CPU reports avx512f) = 64; clock from the CPU model name, else /proc/cpuinfo MHz; no turbo, no AVX frequency drop",
    }
}

/// Time the roofline allows over the time taken: `max(flops/peak, bytes/bw) / t`.
pub fn roofline_fraction(
    flops: u64,
    bytes: u64,
    seconds: f64,
    peak_gflops: f64,
    mem_gbps: f64,
) -> f64 {
    let compute = flops as f64 / (peak_gflops * 1e9);
    let memory = bytes as f64 / (mem_gbps * 1e9);
    compute.max(memory) / seconds
}

/// A reduction of every element, as the benchmark tables run it.
pub type FullReduction = fn(&Tensor) -> Result<Tensor>;

/// Sum, mean and max of all elements of `x`, each with the scale its error
/// is measured against: sums of mixed-sign data cancel, so theirs is the
/// sum (or mean) of magnitudes; `None` is the result's own magnitude.
pub fn full_reductions(x: &Tensor) -> Result<Vec<(&'static str, FullReduction, Option<f64>)>> {
    let abs_sum: f64 = x.to_vec_f64()?.iter().map(|v| v.abs()).sum();
    let n = x.numel() as f64;
    Ok(vec![
        ("sum", |t| t.sum(&[], false), Some(abs_sum)),
        ("mean", |t| t.mean(&[], false), Some(abs_sum / n)),
        ("max", |t| t.max(&[], false), None),
    ])
}

/// The 10-op elementwise chain of the suites (`y * 1.01 + s`, five times):
/// on a tiny tensor it prices per-call overhead, on a large one fusion.
pub fn chain10(s: &Tensor) -> Result<Tensor> {
    let mut y = s.clone();
    for i in 0..10 {
        y = if i % 2 == 0 {
            y.mul_scalar(1.01)?
        } else {
            y.add(s)?
        };
    }
    Ok(y)
}
