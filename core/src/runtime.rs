//! Realization: build the graph of the lazy tensors asked for, look its
//! structure up in the schedule cache (or run the passes and schedule it),
//! execute, and record the results in the tensors' nodes.

use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::auto;
use crate::backend::cpu::exec::execute;
use crate::backend::Storage;
use crate::codegen::{render, RenderOptions, RenderedKernel};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::build::{walk, Walked};
use crate::graph::dag::Graph;
use crate::graph::print::{debug_enabled, graph_to_string};
use crate::passes::{optimize, Limits};
use crate::schedule::{schedule_graph, Schedule};
use crate::tensor::Tensor;

/// A compiled graph: the optimized graph (for inspection) and its schedule.
#[derive(Debug)]
pub struct Compiled {
    pub graph: Graph,
    pub schedule: Schedule,
}

type Key = (u64, Limits);

/// The schedule cache, in two parts. A graph compiled for the first time
/// goes into `fresh`, a ring of [`FRESH_CAPACITY`] entries whose oldest
/// entry is dropped for each new one; when the same structure is asked for
/// again while it is there, it moves to `kept`. So graphs built once (a new
/// random seed or scalar constant every call is a new graph: seeds and
/// constants are kernel constants) cycle through a ring of fixed size and
/// memory stays flat, while graphs that are run again stay compiled.
struct Cache {
    kept: HashMap<Key, Vec<(Graph, Arc<Compiled>)>>,
    /// Entries in `kept` (a key may hold several graphs whose hashes collide).
    kept_len: usize,
    fresh: VecDeque<(Key, Graph, Arc<Compiled>)>,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            kept: HashMap::default(),
            kept_len: 0,
            // Allocated once at its full size: the ring never regrows.
            fresh: VecDeque::with_capacity(FRESH_CAPACITY),
        })
    })
}

/// Graphs run more than once that the cache holds at most; beyond that it
/// starts over (a process that reruns endless distinct shapes must not
/// grow without bound).
const CACHE_CAPACITY: usize = 4096;

/// Graphs compiled once that the cache holds until they are run again (or
/// pushed out by newer ones).
const FRESH_CAPACITY: usize = 64;

impl Cache {
    fn lookup(&mut self, key: &Key, w: &Walked) -> Option<Arc<Compiled>> {
        if let Some(hit) = self
            .kept
            .get(key)
            .and_then(|v| v.iter().find(|(g, _)| w.matches(g)))
        {
            return Some(hit.1.clone());
        }
        let i = self
            .fresh
            .iter()
            .position(|(k, g, _)| k == key && w.matches(g))?;
        let (key, graph, compiled) = self.fresh.remove(i)?;
        if self.kept_len >= CACHE_CAPACITY {
            self.kept.clear();
            self.kept_len = 0;
        }
        self.kept
            .entry(key)
            .or_default()
            .push((graph, compiled.clone()));
        self.kept_len += 1;
        Some(compiled)
    }

    fn insert(&mut self, key: Key, graph: Graph, compiled: Arc<Compiled>) {
        if self.fresh.len() >= FRESH_CAPACITY {
            self.fresh.pop_front();
        }
        self.fresh.push_back((key, graph, compiled));
    }
}

/// Graphs the schedule cache holds now: (run more than once, compiled once).
pub fn cache_len() -> (usize, usize) {
    let c = cache().lock().unwrap_or_else(|p| p.into_inner());
    (c.kept_len, c.fresh.len())
}

static HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);

/// Cache hits and misses since start, for the benchmarks and tests.
pub fn cache_stats() -> (u64, u64) {
    (HITS.load(Ordering::Relaxed), MISSES.load(Ordering::Relaxed))
}

/// Runs the passes and the scheduler on a graph.
pub fn compile(mut graph: Graph, limits: &Limits) -> Result<Compiled> {
    if debug_enabled("graph") {
        eprintln!(
            "== fusegraph graph before passes ==\n{}",
            graph_to_string(&graph)
        );
    }
    optimize(&mut graph, limits);
    if debug_enabled("graph") {
        eprintln!(
            "== fusegraph graph after passes ({} kernels) ==\n{}",
            graph.kernel_count(),
            graph_to_string(&graph)
        );
    }
    let schedule = schedule_graph(&graph)?;
    if debug_enabled("kernels") {
        for (i, step) in schedule.steps.iter().enumerate() {
            eprintln!(
                "== fusegraph kernel {i}: {} ({} FLOP, {} B) ==",
                step.kernel.kind(),
                step.kernel.flops(),
                step.kernel.bytes()
            );
            for opts in [RenderOptions::wgsl(), RenderOptions::cuda()] {
                match render(&step.kernel, &opts) {
                    Ok(k) => eprintln!("-- {:?} {} --\n{}", opts.dialect, k.entry, k.source),
                    Err(e) => eprintln!("-- {:?}: not renderable: {e} --", opts.dialect),
                }
            }
        }
    }
    Ok(Compiled { graph, schedule })
}

/// The compiled form of the graph that computes `tensors` (from the cache
/// when a graph of the same structure was compiled before).
pub fn compiled_for(tensors: &[Tensor], limits: &Limits) -> Result<Arc<Compiled>> {
    let nodes: Vec<_> = tensors.iter().map(|t| t.node().clone()).collect();
    lookup_or_compile(&walk(&nodes), limits)
}

fn lookup_or_compile(w: &Walked, limits: &Limits) -> Result<Arc<Compiled>> {
    let key = (w.hash, *limits);
    let hit = cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .lookup(&key, w);
    if let Some(hit) = hit {
        HITS.fetch_add(1, Ordering::Relaxed);
        return Ok(hit);
    }
    MISSES.fetch_add(1, Ordering::Relaxed);
    let graph = w.to_graph();
    let compiled = Arc::new(compile(graph.clone(), limits)?);
    cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, graph, compiled.clone());
    Ok(compiled)
}

/// The fusion limits of `device` (the CPU's, or what the GPU backend
/// granted). `Device::Auto` compiles within both the CPU's and its GPU's
/// limits, so one schedule runs on either.
pub fn limits_for(device: Device) -> Result<Limits> {
    match device {
        Device::Cpu => Ok(Limits::cpu()),
        Device::Auto => {
            let cpu = Limits::cpu();
            Ok(match auto::gpu().map(crate::backend::get) {
                Some(Ok(b)) => Limits {
                    max_kernel_args: cpu.max_kernel_args.min(b.limits().max_kernel_args),
                    ..cpu
                },
                _ => cpu,
            })
        }
        gpu => Ok(crate::backend::get(gpu)?.limits()),
    }
}

/// Computes `tensors` with their device's limits.
pub fn realize(tensors: &[Tensor]) -> Result<()> {
    let Some(device) = pending_device(tensors)? else {
        return Ok(());
    };
    match device {
        Device::Cpu | Device::Auto => realize_on(tensors, device, &limits_for(device)?),
        // One registry lookup serves the limits and the launch (an eager
        // op's whole host budget is a few microseconds).
        gpu => {
            let backend = crate::backend::get(gpu)?;
            realize_on_backend(tensors, device, &backend.limits(), Some(&*backend))
        }
    }
}

/// Computes `tensors` with explicit limits (e.g. fusion off for
/// comparisons). On a GPU the binding limit is never raised above what the
/// adapter granted.
pub fn realize_with(tensors: &[Tensor], limits: &Limits) -> Result<()> {
    let Some(device) = pending_device(tensors)? else {
        return Ok(());
    };
    let granted = limits_for(device)?;
    let limits = Limits {
        max_kernel_args: limits.max_kernel_args.min(granted.max_kernel_args),
        ..*limits
    };
    realize_on(tensors, device, &limits)
}

/// The one device of the tensors still to compute (`None`: nothing to do).
fn pending_device(tensors: &[Tensor]) -> Result<Option<Device>> {
    let mut device = None;
    for t in tensors.iter().filter(|t| !t.is_realized()) {
        match device {
            None => device = Some(*t.device()),
            Some(d) if d != *t.device() => {
                return Err(Error::DeviceMismatch {
                    op: "realize",
                    lhs: d.name(),
                    rhs: t.device().name(),
                })
            }
            Some(_) => {}
        }
    }
    Ok(device)
}

fn realize_on(tensors: &[Tensor], device: Device, limits: &Limits) -> Result<()> {
    realize_on_backend(tensors, device, limits, None)
}

/// [`realize_on`] with the GPU backend already looked up (`None`: look it
/// up when needed).
fn realize_on_backend(
    tensors: &[Tensor],
    device: Device,
    limits: &Limits,
    backend: Option<&dyn crate::backend::Backend>,
) -> Result<()> {
    let pending: Vec<_> = tensors
        .iter()
        .filter(|t| !t.is_realized())
        .map(|t| t.node().clone())
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    let w = walk(&pending);
    // Auto's inputs may live anywhere: they are moved where the graph runs.
    let stray = w.leaf_storage.iter().find(|s| s.device() != device);
    if let (Some(stray), false) = (stray, device == Device::Auto) {
        return Err(Error::DeviceMismatch {
            op: "realize",
            lhs: device.name(),
            rhs: stray.device().name(),
        });
    }
    let compiled = lookup_or_compile(&w, limits)?;
    let results = match device {
        Device::Cpu => execute(&compiled.schedule, &w.leaf_storage)?,
        Device::Auto => execute_auto(&w, &compiled.schedule)?,
        gpu => match backend {
            Some(b) => b.execute(&compiled.schedule, &w.leaf_storage)?,
            None => crate::backend::get(gpu)?.execute(&compiled.schedule, &w.leaf_storage)?,
        },
    };
    for (node, storage) in pending.iter().zip(results) {
        node.set_ready(storage);
    }
    Ok(())
}

/// Runs an Auto graph where [`auto::choose`] places it, moving its inputs
/// there; a recoverable GPU failure runs it again on the CPU.
fn execute_auto(w: &Walked, schedule: &Schedule) -> Result<Vec<Arc<Storage>>> {
    let target = auto::choose(schedule, &w.leaf_storage);
    if target != Device::Cpu {
        let on_gpu = migrate(w, target)
            .and_then(|leaves| crate::backend::get(target)?.execute(schedule, &leaves));
        match on_gpu {
            Ok(results) => {
                auto::record_placement(target);
                return Ok(results);
            }
            Err(e) if auto::is_recoverable(&e) => auto::record_fallback(target, &e),
            Err(e) => return Err(e),
        }
    }
    auto::record_placement(Device::Cpu);
    execute(schedule, &migrate(w, Device::Cpu)?)
}

/// The walk's inputs on `target`. A moved input is recorded in its nodes,
/// so the next graph that reads it finds it there and does not copy again.
fn migrate(w: &Walked, target: Device) -> Result<Vec<Arc<Storage>>> {
    let moved = w
        .leaf_storage
        .iter()
        .map(|s| auto::moved(s, target))
        .collect::<Result<Vec<_>>>()?;
    for (node, leaf) in w.nodes.iter().zip(&w.leaf) {
        if let Some(i) = *leaf {
            if !Arc::ptr_eq(&moved[i], &w.leaf_storage[i]) {
                node.set_ready(moved[i].clone());
            }
        }
    }
    Ok(moved)
}

/// Waits for every kernel submitted to `device` (a no-op on the CPU, whose
/// kernels finish before `realize` returns; Auto waits for its GPU).
/// Benchmarks call this before stopping the clock.
pub fn synchronize(device: Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
        Device::Auto => match auto::gpu() {
            Some(gpu) => crate::backend::get(gpu)?.synchronize(),
            None => Ok(()),
        },
        gpu => crate::backend::get(gpu)?.synchronize(),
    }
}

/// Renders every kernel of a schedule for one target (what a GPU backend
/// compiles; also timed by the benchmarks as the codegen step).
pub fn render_schedule(schedule: &Schedule, opts: &RenderOptions) -> Result<Vec<RenderedKernel>> {
    schedule
        .steps
        .iter()
        .map(|s| render(&s.kernel, opts))
        .collect()
}
