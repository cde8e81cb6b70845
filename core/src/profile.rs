//! The kernel profiler: records every kernel the CPU backend runs with its
//! time, FLOPs and bytes, prints a table sorted by time with the fraction of
//! the roofline each kernel reaches, and writes a Chrome/Perfetto trace.
//!
//! Off by default. When off, the only cost is one relaxed atomic load per
//! kernel. Two ways to turn it on:
//!
//! - an API scope, which returns the kernels run while it was open:
//!
//!   ```
//!   use fusegraph_core::{profile, Device, Tensor};
//!   let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], &Device::Cpu)?;
//!   let scope = profile::Scope::start();
//!   x.softmax(-1)?.realize()?;
//!   let report = scope.finish();
//!   assert!(!report.records.is_empty());
//!   # Ok::<(), fusegraph_core::Error>(())
//!   ```
//!
//! - `FUSEGRAPH_PROFILE=1` in the environment (read once, at the first
//!   kernel or scope): every kernel of the process is recorded, and
//!   [`report_env`] prints the table to stderr and, when
//!   `FUSEGRAPH_PROFILE_TRACE=<path>` is set, writes the trace there. The
//!   `fusegraph` CLI calls it before it exits.
//!
//! The recorder is process-wide and kept simple: one global list of records
//! and a count of open scopes. Scopes open at the same time (nested, or on
//! several threads) each see every kernel run while they are open, including
//! the other threads' kernels; filter [`Report::records`] by
//! [`Record::thread`] (see [`thread_id`]) to keep one thread's.
//!
//! A kernel is timed on the thread that launched it, around the whole
//! kernel (its parallel work included); GPU backends record the GPU's own
//! time instead where they can (wgpu: timestamp queries; CUDA: events).
//! On `wasm32` there is no clock (`std::time::Instant` panics there):
//! kernels are still recorded, with zero start and duration.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

use crate::codegen::kernel_hash;
use crate::schedule::kernel::Kernel;

/// One kernel launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// `fg_<kind>_<hash of the kernel IR>`, the name the renderers give the kernel.
    pub name: String,
    /// `Kernel::kind()`: `map`, `reduce`, `rowwise`, `matmul`, ...
    pub kind: &'static str,
    /// Start, in nanoseconds since the profiler's epoch (its first use in the process).
    pub start_ns: u64,
    pub dur_ns: u64,
    /// `Kernel::flops()` of the launch.
    pub flops: u64,
    /// `Kernel::bytes()` of the launch.
    pub bytes: u64,
    /// The launching thread, numbered by the profiler from 1 (see [`thread_id`]).
    pub thread: u64,
}

/// What the machine can do at best: the two roofs of the roofline model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roofline {
    /// FLOP per second.
    pub peak_flops: f64,
    /// Bytes per second (read plus written, as `Kernel::bytes` counts them).
    pub peak_bytes_per_s: f64,
}

/// Clock rate assumed by [`Roofline::measure_cpu`], in Hz.
pub const ASSUMED_HZ: f64 = 3.0e9;
/// f32 FLOP per cycle per core assumed by [`Roofline::measure_cpu`]:
/// 2 FMA units × 8 f32 lanes (AVX2) × 2 FLOP per FMA.
pub const ASSUMED_FLOP_PER_CYCLE: f64 = 32.0;

impl Roofline {
    pub fn new(peak_flops: f64, peak_bytes_per_s: f64) -> Self {
        Roofline {
            peak_flops,
            peak_bytes_per_s,
        }
    }

    /// The CPU roofline of this machine. Bandwidth is measured now: about
    /// 50 ms of `copy_from_slice` between two 64 MiB buffers (plus about as
    /// long again to fault their pages in), on one thread and on all
    /// threads, the best of either, counting bytes read plus written.
    /// Smaller buffers stay in the last-level cache of server CPUs and
    /// overstate the memory roof (32 MiB read 1.5x the DRAM figure on the
    /// development machine). Peak FLOP/s is *assumed*, not measured:
    /// `available_parallelism() × 3 GHz × 32 FLOP/cycle` (two AVX2 FMA
    /// units of 8 f32 lanes; no turbo, no AVX-512, no frequency drop). On a
    /// CPU with AVX-512 or a higher clock, compute-bound kernels such as a
    /// large matmul can show more than 100% of this roofline.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn measure_cpu() -> Self {
        use std::time::{Duration, Instant};
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let n = 16 << 20; // f32 elements: 64 MiB per buffer
        let src = vec![1.0f32; n];
        let mut dst = vec![0.0f32; n];
        dst.copy_from_slice(&src); // touch every page before timing
        let budget = Instant::now();
        let mut best = 0.0f64;
        let mut round = 0usize;
        while round < 4 || budget.elapsed() < Duration::from_millis(50) {
            let t = if round % 2 == 0 { 1 } else { threads };
            let chunk = n.div_ceil(t);
            let start = Instant::now();
            if t == 1 {
                dst.copy_from_slice(&src);
            } else {
                std::thread::scope(|s| {
                    for (d, sr) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                        s.spawn(move || d.copy_from_slice(sr));
                    }
                });
            }
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            best = best.max(2.0 * (n * 4) as f64 / secs);
            round += 1;
            if round >= 32 {
                break;
            }
        }
        std::hint::black_box(&dst);
        Roofline {
            peak_flops: threads as f64 * ASSUMED_HZ * ASSUMED_FLOP_PER_CYCLE,
            peak_bytes_per_s: best,
        }
    }

    /// FLOP/s the roofline allows at `intensity` FLOP/byte:
    /// `min(peak_flops, intensity × peak_bytes_per_s)`.
    pub fn attainable_flops(&self, intensity: f64) -> f64 {
        self.peak_flops.min(intensity * self.peak_bytes_per_s)
    }

    /// Fraction of the roofline reached by `flops` FLOPs and `bytes` bytes in
    /// `seconds`: achieved FLOP/s over [`Self::attainable_flops`], written as
    /// `max(flops / peak_flops, bytes / peak_bw) / seconds` (the same value,
    /// and also defined for kernels that do no arithmetic, such as copies).
    pub fn fraction(&self, flops: u64, bytes: u64, seconds: f64) -> f64 {
        if seconds <= 0.0 {
            return 0.0;
        }
        let compute = flops as f64 / self.peak_flops;
        let memory = bytes as f64 / self.peak_bytes_per_s;
        compute.max(memory) / seconds
    }
}

/// The records of a scope (or of the whole process, for [`report_env`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// In launch order.
    pub records: Vec<Record>,
}

/// One row of [`Report::table`]: every launch of one kernel name.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSummary {
    pub name: String,
    pub kind: &'static str,
    pub calls: u64,
    pub total_ns: u64,
    pub flops: u64,
    pub bytes: u64,
}

impl KernelSummary {
    fn seconds(&self) -> f64 {
        self.total_ns as f64 * 1e-9
    }
    pub fn intensity(&self) -> f64 {
        self.flops as f64 / self.bytes.max(1) as f64
    }
}

impl Report {
    /// Total kernel time, in nanoseconds.
    pub fn total_ns(&self) -> u64 {
        self.records.iter().map(|r| r.dur_ns).sum()
    }

    /// Launches grouped by kernel name, the most total time first (ties by name).
    pub fn summary(&self) -> Vec<KernelSummary> {
        let mut rows: Vec<KernelSummary> = Vec::new();
        let mut index: rustc_hash::FxHashMap<&str, usize> = Default::default();
        for r in &self.records {
            let i = *index.entry(&r.name).or_insert_with(|| {
                rows.push(KernelSummary {
                    name: r.name.clone(),
                    kind: r.kind,
                    calls: 0,
                    total_ns: 0,
                    flops: 0,
                    bytes: 0,
                });
                rows.len() - 1
            });
            let row = &mut rows[i];
            row.calls += 1;
            row.total_ns += r.dur_ns;
            row.flops += r.flops;
            row.bytes += r.bytes;
        }
        rows.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.name.cmp(&b.name))
        });
        rows
    }

    /// The per-kernel table, sorted by total time: calls, total ms, share of
    /// the time, mean µs, GFLOP/s, GB/s, FLOP/byte and % of `roofline`.
    pub fn table(&self, roofline: Roofline) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "roofline: peak {:.0} GFLOP/s (assumed: {} threads x {:.0} GHz x {:.0} FLOP/cycle), memory {:.1} GB/s",
            roofline.peak_flops / 1e9,
            (roofline.peak_flops / (ASSUMED_HZ * ASSUMED_FLOP_PER_CYCLE)).round(),
            ASSUMED_HZ / 1e9,
            ASSUMED_FLOP_PER_CYCLE,
            roofline.peak_bytes_per_s / 1e9
        );
        let _ = writeln!(
            s,
            "{:<28} {:>6} {:>10} {:>6} {:>10} {:>9} {:>8} {:>7} {:>9}",
            "kernel",
            "calls",
            "total ms",
            "time%",
            "mean µs",
            "GFLOP/s",
            "GB/s",
            "FLOP/B",
            "roofline"
        );
        let total = self.total_ns().max(1) as f64;
        for row in self.summary() {
            let secs = row.seconds();
            let per_s = |x: u64| {
                if secs > 0.0 {
                    x as f64 / secs / 1e9
                } else {
                    0.0
                }
            };
            let _ = writeln!(
                s,
                "{:<28} {:>6} {:>10.3} {:>5.1}% {:>10.1} {:>9.2} {:>8.2} {:>7.2} {:>8.1}%",
                row.name,
                row.calls,
                secs * 1e3,
                100.0 * row.total_ns as f64 / total,
                secs * 1e6 / row.calls.max(1) as f64,
                per_s(row.flops),
                per_s(row.bytes),
                row.intensity(),
                100.0 * roofline.fraction(row.flops, row.bytes, secs)
            );
        }
        let _ = writeln!(
            s,
            "{:<28} {:>6} {:>10.3}",
            "total",
            self.records.len(),
            self.total_ns() as f64 * 1e-6
        );
        s
    }

    /// The records in the Chrome Trace Event Format (open it in Perfetto or
    /// `chrome://tracing`): one complete (`"ph":"X"`) event per launch, times in µs.
    pub fn chrome_trace_json(&self) -> String {
        let mut s = String::from("{\"traceEvents\":[");
        for (i, r) in self.records.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str("{\"name\":");
            push_json_string(&mut s, &r.name);
            let _ = write!(
                s,
                ",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":{}.{:03},\"dur\":{}.{:03},\"pid\":1,\"tid\":{},\"args\":{{\"kind\":",
                r.start_ns / 1000,
                r.start_ns % 1000,
                r.dur_ns / 1000,
                r.dur_ns % 1000,
                r.thread
            );
            push_json_string(&mut s, r.kind);
            let _ = write!(s, ",\"flops\":{},\"bytes\":{}}}}}", r.flops, r.bytes);
        }
        s.push_str("],\"displayTimeUnit\":\"ns\"}");
        s
    }

    /// Writes [`Self::chrome_trace_json`] to `path`.
    pub fn write_chrome_trace(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.chrome_trace_json())
    }
}

/// Appends `v` as a JSON string literal.
fn push_json_string(s: &mut String, v: &str) {
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

// ---- the recorder ----

/// Open scopes, plus one while `FUSEGRAPH_PROFILE=1` is set. `usize::MAX`
/// until the environment has been read.
static ACTIVE: AtomicUsize = AtomicUsize::new(UNREAD);
const UNREAD: usize = usize::MAX;
static INIT: Once = Once::new();
static ENV_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

#[cfg(not(target_arch = "wasm32"))]
static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

thread_local! {
    static THREAD: u64 = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

fn records() -> MutexGuard<'static, Vec<Record>> {
    RECORDS.lock().unwrap_or_else(|p| p.into_inner())
}

fn init() {
    INIT.call_once(|| {
        #[cfg(not(target_arch = "wasm32"))]
        let _ = EPOCH.get_or_init(std::time::Instant::now);
        let on = std::env::var("FUSEGRAPH_PROFILE").is_ok_and(|v| {
            let v = v.trim();
            !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false")
        });
        ENV_ON.store(on, Ordering::Relaxed);
        // Scopes cannot have started yet: they call `init` first.
        ACTIVE.store(usize::from(on), Ordering::SeqCst);
    });
}

/// True while any scope is open or `FUSEGRAPH_PROFILE=1` is set.
#[inline]
pub fn enabled() -> bool {
    match ACTIVE.load(Ordering::Relaxed) {
        0 => false,
        UNREAD => {
            init();
            ACTIVE.load(Ordering::Relaxed) != 0
        }
        _ => true,
    }
}

/// True when `FUSEGRAPH_PROFILE=1` (or any value but `0`/`false`) is set.
pub fn env_enabled() -> bool {
    init();
    ENV_ON.load(Ordering::Relaxed)
}

/// The profiler's number for the calling thread (the `thread` of its records).
pub fn thread_id() -> u64 {
    THREAD.with(|t| *t)
}

#[cfg(not(target_arch = "wasm32"))]
fn now_ns() -> u64 {
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

#[cfg(target_arch = "wasm32")]
fn now_ns() -> u64 {
    0
}

/// Runs `f` (the launch of `kernel`) and records it when profiling is on.
#[inline]
pub fn time_kernel<T>(kernel: &Kernel, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let start = now_ns();
    let out = f();
    let dur = now_ns().saturating_sub(start);
    record(kernel, start, dur);
    out
}

/// Like [`time_kernel`], for a launch that can measure itself: `f` returns
/// the device's own duration of the kernel in nanoseconds (GPU timestamps)
/// or `None`, and that duration is recorded instead of the host's time
/// around `f` when present.
pub fn time_kernel_measured<E>(
    kernel: &Kernel,
    f: impl FnOnce() -> std::result::Result<Option<u64>, E>,
) -> std::result::Result<(), E> {
    if !enabled() {
        return f().map(|_| ());
    }
    let start = now_ns();
    let measured = f()?;
    let wall = now_ns().saturating_sub(start);
    record(kernel, start, measured.unwrap_or(wall));
    Ok(())
}

#[cold]
fn record(kernel: &Kernel, start_ns: u64, dur_ns: u64) {
    let r = Record {
        name: format!("fg_{}_{:016x}", kernel.kind(), kernel_hash(kernel)),
        kind: kernel.kind(),
        start_ns,
        dur_ns,
        flops: kernel.flops(),
        bytes: kernel.bytes(),
        thread: thread_id(),
    };
    let mut recs = records();
    // The last scope may have closed while the kernel ran: drop the record then.
    if ACTIVE.load(Ordering::Relaxed) != 0 {
        recs.push(r);
    }
}

/// An open profiling scope; [`Scope::finish`] returns what it saw. Dropping
/// it without `finish` closes it too.
#[derive(Debug)]
#[must_use = "a scope records until it is finished or dropped"]
pub struct Scope {
    first: usize,
    open: bool,
}

impl Scope {
    /// Starts recording every kernel of the process (see the module docs).
    pub fn start() -> Scope {
        init();
        let recs = records();
        ACTIVE.fetch_add(1, Ordering::SeqCst);
        Scope {
            first: recs.len(),
            open: true,
        }
    }

    /// Stops this scope and returns the kernels run since it started.
    pub fn finish(mut self) -> Report {
        self.close()
    }

    fn close(&mut self) -> Report {
        if !self.open {
            return Report::default();
        }
        self.open = false;
        let mut recs = records();
        let mine = recs.get(self.first..).unwrap_or(&[]).to_vec();
        if ACTIVE.fetch_sub(1, Ordering::SeqCst) == 1 {
            // Nothing records any more: free the list.
            recs.clear();
        }
        Report { records: mine }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        self.close();
    }
}

/// Every kernel recorded so far in the process (what `FUSEGRAPH_PROFILE=1`
/// collects), without clearing them.
pub fn snapshot() -> Report {
    Report {
        records: records().clone(),
    }
}

/// When `FUSEGRAPH_PROFILE=1` is set: prints the table of every kernel run
/// so far to stderr (with [`Roofline::measure_cpu`]) and, when
/// `FUSEGRAPH_PROFILE_TRACE=<path>` is set, writes the Chrome trace there.
/// Returns the report, or `None` when the variable is not set. Call it once,
/// before the process exits (the `fusegraph` CLI does).
pub fn report_env() -> Option<Report> {
    if !env_enabled() {
        return None;
    }
    let report = snapshot();
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!(
        "\nfusegraph profile (FUSEGRAPH_PROFILE): {} kernel launches\n{}",
        report.records.len(),
        report.table(Roofline::measure_cpu())
    );
    if let Ok(path) = std::env::var("FUSEGRAPH_PROFILE_TRACE") {
        match report.write_chrome_trace(&path) {
            Ok(()) => eprintln!("fusegraph profile: trace written to {path}"),
            Err(e) => eprintln!("fusegraph profile: cannot write the trace to {path}: {e}"),
        }
    }
    Some(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Device, Tensor};

    fn mine(r: Report) -> Vec<Record> {
        let me = thread_id();
        r.records.into_iter().filter(|r| r.thread == me).collect()
    }

    fn rec(name: &str, dur_ns: u64, flops: u64, bytes: u64) -> Record {
        Record {
            name: name.into(),
            kind: "map",
            start_ns: 1_500,
            dur_ns,
            flops,
            bytes,
            thread: 1,
        }
    }

    #[test]
    fn records_appear_only_inside_a_scope() {
        let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0, -4.0], [2, 2], &Device::Cpu).unwrap();
        // Before any scope: not recorded by the one that follows.
        x.add(&x).unwrap().relu().unwrap().realize().unwrap();
        let scope = Scope::start();
        assert!(enabled());
        x.mul(&x).unwrap().exp().unwrap().realize().unwrap();
        let got = mine(scope.finish());
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].kind, "map");
        assert!(got[0].name.starts_with("fg_map_") && got[0].name.len() == 7 + 16);
        assert!(got[0].flops > 0 && got[0].bytes >= 16);
        // After the scope: a new scope sees none of it.
        x.sub(&x).unwrap().abs().unwrap().realize().unwrap();
        let empty = Scope::start();
        assert!(mine(empty.finish()).is_empty());
    }

    #[test]
    fn nested_scopes_both_see_the_inner_kernels() {
        let x = Tensor::from_vec(vec![1.0f32; 8], [8], &Device::Cpu).unwrap();
        let outer = Scope::start();
        x.add(&x).unwrap().realize().unwrap();
        let inner = Scope::start();
        x.mul(&x).unwrap().realize().unwrap();
        let inner = mine(inner.finish());
        let outer = mine(outer.finish());
        assert_eq!(inner.len(), 1);
        assert_eq!(outer.len(), 2);
        assert_eq!(outer[1], inner[0]);
        assert!(outer[0].start_ns <= outer[1].start_ns);
    }

    #[test]
    fn trace_json_parses_and_escapes() {
        let mut a = rec("fg_map_\"q\"\\\n\u{1}", 2_250, 10, 20);
        a.thread = 7;
        let r = Report {
            records: vec![a, rec("fg_reduce_1", 1_000, 0, 8)],
        };
        let v: serde_json::Value = serde_json::from_str(&r.chrome_trace_json()).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0]["name"], "fg_map_\"q\"\\\n\u{1}");
        assert_eq!(ev[0]["cat"], "kernel");
        assert_eq!(ev[0]["ph"], "X");
        assert_eq!(ev[0]["ts"].as_f64(), Some(1.5));
        assert_eq!(ev[0]["dur"].as_f64(), Some(2.25));
        assert_eq!(ev[0]["pid"], 1);
        assert_eq!(ev[0]["tid"], 7);
        assert_eq!(ev[0]["args"]["flops"], 10);
        assert_eq!(ev[0]["args"]["bytes"], 20);
        let empty: serde_json::Value =
            serde_json::from_str(&Report::default().chrome_trace_json()).unwrap();
        assert!(empty["traceEvents"].as_array().unwrap().is_empty());
    }

    #[test]
    fn table_is_sorted_by_total_time_per_kernel() {
        let r = Report {
            records: vec![
                rec("fg_map_small", 1_000, 1, 1),
                rec("fg_map_big", 3_000, 1, 1),
                rec("fg_map_small", 1_500, 1, 1),
                rec("fg_map_mid", 2_000, 1, 1),
            ],
        };
        let rows = r.summary();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["fg_map_big", "fg_map_small", "fg_map_mid"]);
        assert_eq!(rows[1].calls, 2);
        assert_eq!(rows[1].total_ns, 2_500);
        let table = r.table(Roofline::new(1e9, 1e9));
        let pos = |n: &str| table.find(n).unwrap();
        assert!(pos("fg_map_big") < pos("fg_map_small") && pos("fg_map_small") < pos("fg_map_mid"));
        assert!(table.contains("3 GHz x 32 FLOP/cycle"));
    }

    #[test]
    fn roofline_math_on_a_synthetic_record() {
        let roof = Roofline::new(100e9, 10e9); // ridge at 10 FLOP/byte
        assert_eq!(roof.attainable_flops(2.0), 20e9);
        assert_eq!(roof.attainable_flops(50.0), 100e9);
        // Memory-bound: 2 GFLOP over 1 GB (2 FLOP/B) in 0.5 s = 4 GFLOP/s of 20 allowed.
        assert!((roof.fraction(2_000_000_000, 1_000_000_000, 0.5) - 0.2).abs() < 1e-12);
        // Compute-bound: 50 GFLOP over 1 GB in 1 s = 50 of 100 GFLOP/s.
        assert!((roof.fraction(50_000_000_000, 1_000_000_000, 1.0) - 0.5).abs() < 1e-12);
        // A copy (no FLOPs): 1 GB in 0.2 s = 5 of 10 GB/s.
        assert!((roof.fraction(0, 1_000_000_000, 0.2) - 0.5).abs() < 1e-12);
        let r = Report {
            records: vec![rec("fg_map_x", 500_000_000, 2_000_000_000, 1_000_000_000)],
        };
        let table = r.table(roof);
        let row = table.lines().find(|l| l.starts_with("fg_map_x")).unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "1"); // calls
        assert_eq!(cols[2], "500.000"); // total ms
        assert_eq!(cols[5], "4.00"); // GFLOP/s
        assert_eq!(cols[6], "2.00"); // GB/s
        assert_eq!(cols[7], "2.00"); // FLOP/B
        assert_eq!(cols[8], "20.0%"); // roofline
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn measured_roofline_is_positive() {
        let r = Roofline::measure_cpu();
        assert!(r.peak_bytes_per_s > 1e8 && r.peak_flops >= ASSUMED_HZ * ASSUMED_FLOP_PER_CYCLE);
    }
}
