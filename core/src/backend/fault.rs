//! Fault injection for tests: make a GPU backend's next allocations fail as
//! if the device were out of memory, to check that callers get an error they
//! can handle and that the process stays usable (`Device::Auto` falls back
//! to the CPU). The check is one relaxed atomic load when nothing is armed.
//!
//! Device loss has its own hooks on the backends (`WgpuBackend::lose_device`,
//! `CudaBackend::lose_device`), since a lost device stays lost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::device::Device;
use crate::error::{Error, Result};

static ARMED: AtomicBool = AtomicBool::new(false);

fn pending() -> &'static Mutex<HashMap<Device, u64>> {
    static PENDING: OnceLock<Mutex<HashMap<Device, u64>>> = OnceLock::new();
    PENDING.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Makes the next `count` allocations on `device` fail with
/// [`Error::OutOfMemory`].
pub fn fail_allocations(device: Device, count: u64) {
    let mut p = pending().lock().unwrap_or_else(|e| e.into_inner());
    *p.entry(device).or_insert(0) += count;
    ARMED.store(true, Ordering::Release);
}

/// Disarms every injected fault.
pub fn clear() {
    pending().lock().unwrap_or_else(|e| e.into_inner()).clear();
    ARMED.store(false, Ordering::Release);
}

/// Called by backends before they allocate `bytes` on `device`.
pub fn check_allocation(device: Device, op: &'static str, bytes: u64) -> Result<()> {
    if !ARMED.load(Ordering::Acquire) {
        return Ok(());
    }
    let mut p = pending().lock().unwrap_or_else(|e| e.into_inner());
    match p.get_mut(&device) {
        Some(n) if *n > 0 => {
            *n -= 1;
            Err(Error::OutOfMemory {
                op,
                device: device.name(),
                bytes,
                why: "injected by backend::fault::fail_allocations".into(),
            })
        }
        _ => Ok(()),
    }
}
