//! Generated kernels ready to launch: render once, compile once (NVRTC or
//! the disk cache), load once. Lookups go first by the address of the
//! schedule's `Arc<Kernel>` (schedules are cached, so an eager op finds its
//! launch without hashing), then by `codegen::kernel_hash` (the same kernel
//! in another schedule).

use rustc_hash::FxHashMap as HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex};

use cudarc::driver::{result, sys};
use fusegraph_core::codegen::{kernel_hash, render, RenderOptions};
use fusegraph_core::schedule::Kernel;
use fusegraph_core::{Error, Result};

use super::{error, nvrtc};

/// A loaded kernel and its launch shape.
pub(crate) struct Launch {
    pub(crate) func: sys::CUfunction,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) name: String,
    /// Parameters the kernel takes (args, then the output).
    pub(crate) params: usize,
    /// Launch with programmatic stream serialization (see [`Pdl`]).
    pub(crate) pdl: bool,
}

// SAFETY: a CUfunction is an immutable handle that the driver lets any
// thread launch; modules are never unloaded while the backend lives.
unsafe impl Send for Launch {}
unsafe impl Sync for Launch {}

#[derive(Default)]
struct Maps {
    by_addr: HashMap<usize, (Arc<Kernel>, Arc<Launch>)>,
    by_hash: HashMap<u64, Arc<Launch>>,
}

/// The in-memory module cache of one device.
pub(crate) struct KernelCache {
    maps: Mutex<Maps>,
    arch: u32,
    device: String,
    pdl: Pdl,
}

/// Entries kept by address at most before that map starts over (schedules
/// of endless distinct shapes must not grow it without bound).
const ADDR_CAPACITY: usize = 8192;

impl KernelCache {
    pub(crate) fn new(arch: u32, device: String, sms: i32) -> Self {
        KernelCache {
            maps: Mutex::new(Maps::default()),
            arch,
            device,
            pdl: Pdl::from_env(arch, sms),
        }
    }

    fn maps(&self) -> std::sync::MutexGuard<'_, Maps> {
        self.maps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The launch of `k` (the context must be current).
    pub(crate) fn get(&self, k: &Arc<Kernel>) -> Result<Arc<Launch>> {
        let addr = Arc::as_ptr(k) as usize;
        if let Some((_, l)) = self.maps().by_addr.get(&addr) {
            return Ok(l.clone());
        }
        let launch = self.by_hash(k)?;
        let mut m = self.maps();
        if m.by_addr.len() >= ADDR_CAPACITY {
            m.by_addr.clear();
        }
        // The entry keeps the kernel alive, so its address cannot be reused.
        m.by_addr.insert(addr, (k.clone(), launch.clone()));
        Ok(launch)
    }

    fn by_hash(&self, k: &Kernel) -> Result<Arc<Launch>> {
        let h = kernel_hash(k);
        if let Some(l) = self.maps().by_hash.get(&h) {
            return Ok(l.clone());
        }
        let r = render(k, &RenderOptions::cuda())?;
        let bin = nvrtc::cubin(&r.name, &r.source, self.arch)?;
        let func = load(&bin, &r.entry, &self.device)?;
        let launch = Arc::new(Launch {
            func,
            grid: r.dispatch,
            block: r.workgroup_size,
            name: r.name,
            params: r.bindings.len(),
            pdl: self.pdl.allows(r.dispatch),
        });
        self.maps().by_hash.insert(h, launch.clone());
        Ok(launch)
    }
}

/// Which generated kernels launch with programmatic dependent launch (on
/// sm_90 and later, where their prologue waits for the kernel before them,
/// see `codegen/cuda.rs`). A launch may then begin while the previous kernel
/// on the stream runs; in a captured graph the edge between the two becomes
/// a programmatic one. That hides the microsecond of launch latency between
/// small dependent kernels, but on every kernel it cost the ResNet-18
/// training graph, whose kernels mostly fill the GPU several times over,
/// 5% (likely because the next kernel's blocks are placed while the
/// current one's last wave still holds the multiprocessors). So by default
/// only kernels of at most one block per multiprocessor use it. H100, one
/// device call: 1000 one-block kernels replay in 0.788 ms with it, 1.034
/// ms without; the ResNet-18 step replays in 5.24 ms either way and 5.49 ms
/// with it on every kernel (`FUSEGRAPH_PDL=all`). `FUSEGRAPH_PDL=0` turns
/// it off.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Pdl {
    Off,
    /// Grids of at most this many blocks.
    Small(u64),
    All,
}

impl Pdl {
    fn from_env(arch: u32, sms: i32) -> Pdl {
        if arch < 90 {
            return Pdl::Off;
        }
        match std::env::var("FUSEGRAPH_PDL").as_deref() {
            Ok("0") => Pdl::Off,
            Ok("all") => Pdl::All,
            _ => Pdl::Small(sms.max(1) as u64),
        }
    }

    fn allows(self, grid: [u32; 3]) -> bool {
        let blocks: u64 = grid.iter().map(|&g| g as u64).product();
        match self {
            Pdl::Off => false,
            Pdl::Small(max) => blocks <= max,
            Pdl::All => true,
        }
    }
}

/// Loads a CUBIN and finds `entry` in it.
pub(crate) fn load(bin: &[u8], entry: &str, device: &str) -> Result<sys::CUfunction> {
    let name = CString::new(entry).map_err(|_| Error::Backend {
        op: "cuda load",
        message: format!("entry point {entry:?} contains a NUL byte"),
    })?;
    // SAFETY: `bin` is a complete CUBIN image that outlives the call (the
    // driver copies it); the module is kept for the life of the process.
    unsafe {
        let module = result::module::load_data(bin.as_ptr() as *const c_void)
            .map_err(|e| error::driver("cuda load", device, e))?;
        result::module::get_function(module, name)
            .map_err(|e| error::driver("cuda load", device, e))
    }
}

/// Launches `l` on `stream` with `ptrs` as its buffer parameters.
pub(crate) fn launch(
    l: &Launch,
    ptrs: &mut [sys::CUdeviceptr],
    stream: sys::CUstream,
    device: &str,
) -> Result<()> {
    if l.grid.contains(&0) {
        return Ok(());
    }
    if ptrs.len() != l.params {
        return Err(Error::Backend {
            op: "cuda launch",
            message: format!(
                "{}: {} buffers for {} parameters",
                l.name,
                ptrs.len(),
                l.params
            ),
        });
    }
    // Eager ops launch one small kernel each, so the parameter array lives
    // on the stack unless a fused kernel takes more than it holds.
    const ON_STACK: usize = 16;
    let mut stack = [std::ptr::null_mut::<c_void>(); ON_STACK];
    let mut heap = Vec::new();
    let params: &mut [*mut c_void] = if ptrs.len() <= ON_STACK {
        &mut stack[..ptrs.len()]
    } else {
        heap.resize(ptrs.len(), std::ptr::null_mut());
        &mut heap
    };
    for (slot, p) in params.iter_mut().zip(ptrs.iter_mut()) {
        *slot = p as *mut sys::CUdeviceptr as *mut c_void;
    }
    if l.pdl {
        return launch_programmatic(l, params, stream)
            .map_err(|e| error::driver("cuda launch", device, e));
    }
    // SAFETY: the function takes exactly these pointer parameters (checked
    // above); each points into a buffer sized for the kernel's accesses.
    unsafe {
        result::launch_kernel(
            l.func,
            (l.grid[0], l.grid[1], l.grid[2]),
            (l.block[0], l.block[1], l.block[2]),
            0,
            stream,
            params,
        )
    }
    .map_err(|e| error::driver("cuda launch", device, e))
}

/// `cuLaunchKernelEx` with the programmatic-stream-serialization attribute.
fn launch_programmatic(
    l: &Launch,
    params: &mut [*mut c_void],
    stream: sys::CUstream,
) -> std::result::Result<(), result::DriverError> {
    // SAFETY: an all-zero launch attribute value is valid (a union of plain
    // integers and structs of them); the field is then set explicitly.
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    let config = sys::CUlaunchConfig {
        gridDimX: l.grid[0],
        gridDimY: l.grid[1],
        gridDimZ: l.grid[2],
        blockDimX: l.block[0],
        blockDimY: l.block[1],
        blockDimZ: l.block[2],
        sharedMemBytes: 0,
        hStream: stream,
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: as in `launch`: the parameters match the function (checked by
    // the caller) and `config` and `attr` outlive the call.
    unsafe {
        sys::cuLaunchKernelEx(&config, l.func, params.as_mut_ptr(), std::ptr::null_mut()).result()
    }
}

/// The floor under eager dispatch: the host time of one bare launch of
/// `schedule`'s first kernel (its buffers bound once, `n` launches back to
/// back, no allocation, lookup or bookkeeping), per launch.
pub fn launch_floor(
    dev: &fusegraph_core::Device,
    schedule: &fusegraph_core::schedule::Schedule,
    leaves: &[Arc<fusegraph_core::backend::Storage>],
    n: usize,
) -> Result<std::time::Duration> {
    use fusegraph_core::schedule::BufRef;
    let be = super::backend_of(dev)?;
    let _g = be.enter();
    be.bind()?;
    let step = schedule.steps.first().ok_or_else(|| Error::Backend {
        op: "cuda launch floor",
        message: "the schedule has no kernel".into(),
    })?;
    let info = schedule
        .plan
        .slots
        .get(step.out)
        .ok_or_else(|| Error::Backend {
            op: "cuda launch floor",
            message: "the first kernel's output slot is missing".into(),
        })?;
    let out = be.alloc(super::backend::nbytes(info.dtype, info.len))?;
    let mut ptrs = Vec::new();
    for a in &step.args {
        match a {
            BufRef::Leaf(i) => {
                let leaf = leaves.get(*i).ok_or_else(|| Error::Backend {
                    op: "cuda launch floor",
                    message: format!("leaf {i} is missing"),
                })?;
                ptrs.push(be.ptr_of(leaf)?)
            }
            BufRef::Slot(_) => {
                return Err(Error::Backend {
                    op: "cuda launch floor",
                    message: "the first kernel reads another kernel's output".into(),
                })
            }
        }
    }
    ptrs.push(out.ptr());
    let l = be.kernels.get(&step.kernel)?;
    let t = std::time::Instant::now();
    for _ in 0..n {
        launch(&l, &mut ptrs, be.cu_stream(), &be.name)?;
    }
    let per = t.elapsed() / n.max(1) as u32;
    be.sync_stream()?;
    Ok(per)
}

#[cfg(test)]
mod tests {
    use super::Pdl;

    #[test]
    fn programmatic_launch_is_for_grids_of_one_wave_of_blocks() {
        let small = Pdl::Small(132);
        assert!(small.allows([1, 1, 1]));
        assert!(small.allows([66, 2, 1]));
        assert!(!small.allows([133, 1, 1]));
        assert!(!small.allows([65_535, 2, 1]));
        assert!(Pdl::All.allows([65_535, 65_535, 1]));
        assert!(!Pdl::Off.allows([1, 1, 1]));
        // Before sm_90 the prologue compiles to nothing, so nothing may launch early.
        assert!(matches!(Pdl::from_env(89, 132), Pdl::Off));
    }
}
