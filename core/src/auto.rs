//! `Device::Auto`: each realized graph runs on the CPU or on a GPU, chosen
//! by the size of its work.
//!
//! A small graph loses on a GPU: a launch costs microseconds and its inputs
//! must cross the bus, while the CPU starts at once. A large one wins there
//! by orders of magnitude. The policy here is a threshold on the schedule's
//! floating-point operations, measured by the crossover benchmark (`fusegraph
//! bench --suite cuda`, table `crossover`): a graph of at least
//! [`AutoPolicy::min_gpu_flops`] runs on the GPU; a smaller one runs where its
//! inputs already are (on the GPU when every input lives there, so data is
//! not dragged back and forth; otherwise on the CPU).
//!
//! Tensors made on `Device::Auto` keep their data on the host until a graph
//! that uses them runs on the GPU; the input is then moved there once and
//! stays (a later graph reads the moved copy). Results stay where they were
//! computed; `to_vec`, `to_ndarray` and `to_device` copy them as needed.
//!
//! When the GPU fails (out of memory, device lost, a dtype it cannot
//! compute, a kernel it cannot build), the graph runs again on the CPU and the
//! fallback is logged on stderr; after a device loss Auto stops using that GPU.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::backend::{self, Storage};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::schedule::Schedule;

/// The default threshold, from the crossover benchmark on the H200 machine
/// (16 host cores against one H200; f32 matmul from host inputs to a host
/// result): the CPU still won at 512×512 (0.55 vs 0.58 ms), the GPU won
/// from 768×768 on (0.97 vs 1.14 ms). The threshold sits between them, at
/// 2·640³ ≈ 5.2e8 FLOP. A machine with fewer cores crosses over earlier: set
/// `FUSEGRAPH_AUTO_MIN_FLOPS` or [`set_policy`] from its own
/// `bench/results/cuda.json` (table `crossover`).
pub const DEFAULT_MIN_GPU_FLOPS: u64 = 2 * 640 * 640 * 640;

/// How `Device::Auto` places work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoPolicy {
    /// Graphs with at least this many FLOPs (summed over their kernels) run on
    /// the GPU. `FUSEGRAPH_AUTO_MIN_FLOPS` sets the initial value.
    pub min_gpu_flops: u64,
    /// The GPU to use; `None` picks the first open one (CUDA before wgpu).
    pub gpu: Option<Device>,
}

impl Default for AutoPolicy {
    fn default() -> Self {
        let from_env = std::env::var("FUSEGRAPH_AUTO_MIN_FLOPS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok());
        AutoPolicy {
            min_gpu_flops: from_env.unwrap_or(DEFAULT_MIN_GPU_FLOPS),
            gpu: None,
        }
    }
}

fn policy_cell() -> &'static RwLock<AutoPolicy> {
    static POLICY: OnceLock<RwLock<AutoPolicy>> = OnceLock::new();
    POLICY.get_or_init(|| RwLock::new(AutoPolicy::default()))
}

/// The policy in force.
pub fn policy() -> AutoPolicy {
    *policy_cell().read().unwrap_or_else(|p| p.into_inner())
}

/// Replaces the policy (for every thread: placement is a process setting, as
/// PyTorch's default device is).
pub fn set_policy(p: AutoPolicy) {
    *policy_cell().write().unwrap_or_else(|e| e.into_inner()) = p;
}

/// GPUs Auto stopped using after they were lost.
fn retired() -> &'static Mutex<Vec<Device>> {
    static RETIRED: OnceLock<Mutex<Vec<Device>>> = OnceLock::new();
    RETIRED.get_or_init(|| Mutex::new(Vec::new()))
}

fn is_retired(d: Device) -> bool {
    retired()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&d)
}

/// The GPU Auto would use now, if any is open (and not lost).
pub fn gpu() -> Option<Device> {
    let usable = |d: Device| d.is_open() && !is_retired(d);
    if let Some(d) = policy().gpu {
        return usable(d).then_some(d);
    }
    backend::open_gpus().into_iter().find(|&d| usable(d))
}

/// Inputs of at most this many elements cost next to nothing to move, so
/// they do not hold a graph where they happen to be.
const SMALL_INPUT: usize = 4096;

/// Where a graph with this schedule and these bound inputs runs.
pub fn choose(schedule: &Schedule, leaves: &[Arc<Storage>]) -> Device {
    let flops: u64 = schedule.steps.iter().map(|s| s.kernel.flops()).sum();
    let dtypes = leaves
        .iter()
        .map(|s| s.dtype())
        .chain(schedule.plan.slots.iter().map(|s| s.dtype))
        .chain(schedule.steps.iter().map(|s| s.kernel.out_dtype));
    place_checked(flops, leaves.iter().map(|s| s.as_ref()), dtypes)
}

/// [`place`], keeping work on the CPU when the GPU cannot hold one of `dtypes`.
pub fn place_checked<'a>(
    flops: u64,
    inputs: impl IntoIterator<Item = &'a Storage>,
    mut dtypes: impl Iterator<Item = DType>,
) -> Device {
    let target = place(flops, inputs);
    if target == Device::Cpu {
        return target;
    }
    match backend::get(target) {
        Ok(b) if dtypes.all(|d| b.supports_dtype(d)) => target,
        _ => Device::Cpu,
    }
}

/// Where work of `flops` over `inputs` runs: on the GPU from the threshold
/// up, or when every input that is not small already lives there.
pub fn place<'a>(flops: u64, inputs: impl IntoIterator<Item = &'a Storage>) -> Device {
    let Some(gpu) = gpu() else {
        return Device::Cpu;
    };
    if flops >= policy().min_gpu_flops {
        return gpu;
    }
    let mut large = inputs
        .into_iter()
        .filter(|s| s.len() > SMALL_INPUT)
        .peekable();
    let has_large = large.peek().is_some();
    if has_large && large.all(|s| s.device() == gpu) {
        gpu
    } else {
        Device::Cpu
    }
}

/// True for the GPU failures the CPU can stand in for.
pub fn is_recoverable(e: &Error) -> bool {
    matches!(
        e,
        Error::OutOfMemory { .. }
            | Error::DeviceLost { .. }
            | Error::DeviceUnavailable { .. }
            | Error::UnsupportedDType { .. }
            | Error::Backend { .. }
    )
}

static FALLBACKS: AtomicU64 = AtomicU64::new(0);
static ON_CPU: AtomicU64 = AtomicU64::new(0);
static ON_GPU: AtomicU64 = AtomicU64::new(0);

/// Counts where Auto graphs ran (a fallback counts as a CPU run).
pub fn record_placement(ran_on: Device) {
    let counter = if ran_on.is_cpu() { &ON_CPU } else { &ON_GPU };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Auto graphs run on (the CPU, a GPU) since start.
pub fn placements() -> (u64, u64) {
    (
        ON_CPU.load(Ordering::Relaxed),
        ON_GPU.load(Ordering::Relaxed),
    )
}

fn last_cell() -> &'static Mutex<Option<String>> {
    static LAST: OnceLock<Mutex<Option<String>>> = OnceLock::new();
    LAST.get_or_init(|| Mutex::new(None))
}

/// How many graphs fell back from the GPU to the CPU since start.
pub fn fallbacks() -> u64 {
    FALLBACKS.load(Ordering::Relaxed)
}

/// The log line of the latest fallback.
pub fn last_fallback() -> Option<String> {
    last_cell()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// Logs that `gpu` failed with `e` and the work moves to the CPU; a lost
/// device is retired. The first lines are printed, then every 1000th, so a
/// loop that keeps failing cannot flood the log.
pub fn record_fallback(gpu: Device, e: &Error) {
    let lost = matches!(e, Error::DeviceLost { .. });
    if lost {
        retired()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(gpu);
    }
    let line = format!(
        "fusegraph: Device::Auto: {gpu} failed ({e}); running on the CPU{}",
        if lost { " from now on" } else { " this time" }
    );
    let n = FALLBACKS.fetch_add(1, Ordering::Relaxed);
    if n < 8 || n % 1000 == 0 {
        eprintln!("{line}");
    }
    *last_cell().lock().unwrap_or_else(|p| p.into_inner()) = Some(line);
}

/// Logs, once, that Auto found no GPU (`why`) and runs everything on the CPU.
pub fn record_no_gpu(why: &str) {
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        let line = format!("fusegraph: Device::Auto: no GPU ({why}); running on the CPU");
        eprintln!("{line}");
        *last_cell().lock().unwrap_or_else(|p| p.into_inner()) = Some(line);
    });
}

/// `storage` on `target`: the same buffer when it is there, else a copy.
pub fn moved(storage: &Arc<Storage>, target: Device) -> Result<Arc<Storage>> {
    if storage.device() == target {
        return Ok(storage.clone());
    }
    Ok(Arc::new(match (target, storage.as_cpu()) {
        (Device::Cpu | Device::Auto, _) => Storage::Cpu(storage.to_cpu()?),
        // Upload straight from the host buffer: no intermediate copy.
        (gpu, Some(host)) => backend::get(gpu)?.upload(host)?,
        (gpu, None) => backend::get(gpu)?.upload(&storage.to_cpu()?)?,
    }))
}
