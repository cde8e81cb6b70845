//! A bounded pool of host buffers. Kernel outputs are usually the same few
//! sizes again and again (a training step, an image pipeline, a benchmark
//! loop); handing a dropped tensor's buffer to the next kernel of that size
//! skips the allocator's zeroing and the kernel's page faults. Pooled
//! buffers are never visible with old contents: only kernels that overwrite
//! every element take from the pool.

use std::sync::{Mutex, OnceLock};

use crate::backend::cpu::CpuStorage;
use crate::dtype::DType;
use crate::error::Result;

/// Bytes the pool keeps at most; past that, returned buffers are freed.
const MAX_POOLED_BYTES: usize = 512 << 20;
/// Smaller buffers are cheap to allocate; pooling them is not worth a lock.
const MIN_POOLED_BYTES: usize = 256 << 10;
/// Buffers of one dtype and length the pool keeps at most. A loop that
/// drops more buffers of a size than its kernels take (user inputs made by
/// `from_vec` each iteration, say) would otherwise fill the pool to its
/// byte cap with buffers nobody takes.
const MAX_PER_SIZE: usize = 4;

struct Pool {
    bufs: Vec<CpuStorage>,
    bytes: usize,
}

fn pool() -> &'static Mutex<Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    POOL.get_or_init(|| {
        Mutex::new(Pool {
            bufs: Vec::new(),
            bytes: 0,
        })
    })
}

fn bytes_of(s: &CpuStorage) -> usize {
    s.len() * s.dtype().size_in_bytes()
}

/// A buffer of `dtype` and `len` whose contents are unspecified: the caller
/// must overwrite every element. [`Error::OutOfMemory`](crate::Error)
/// (naming `op`) when no pooled buffer fits and the allocator refuses.
pub fn take(op: &'static str, dtype: DType, len: usize) -> Result<CpuStorage> {
    if len.saturating_mul(dtype.size_in_bytes()) >= MIN_POOLED_BYTES {
        let mut p = pool().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = p
            .bufs
            .iter()
            .position(|b| b.dtype() == dtype && b.len() == len)
        {
            let b = p.bufs.swap_remove(i);
            p.bytes -= bytes_of(&b);
            return Ok(b);
        }
    }
    CpuStorage::try_zeros(op, dtype, len)
}

/// Offers a buffer nobody uses any more to the pool.
pub fn give(s: CpuStorage) {
    let b = bytes_of(&s);
    if !(MIN_POOLED_BYTES..=MAX_POOLED_BYTES).contains(&b) {
        return;
    }
    let mut p = pool().lock().unwrap_or_else(|e| e.into_inner());
    let same_size = |x: &CpuStorage| x.dtype() == s.dtype() && x.len() == s.len();
    if p.bufs.iter().filter(|x| same_size(x)).count() >= MAX_PER_SIZE {
        return;
    }
    // Oldest buffers go first when the pool is full.
    while p.bytes + b > MAX_POOLED_BYTES && !p.bufs.is_empty() {
        let old = p.bufs.remove(0);
        p.bytes -= bytes_of(&old);
    }
    p.bytes += b;
    p.bufs.push(s);
}

/// Bytes held by the pool now (for leak tests).
pub fn pooled_bytes() -> usize {
    pool().lock().unwrap_or_else(|e| e.into_inner()).bytes
}

/// Frees every pooled buffer.
pub fn clear() {
    let mut p = pool().lock().unwrap_or_else(|e| e.into_inner());
    p.bufs.clear();
    p.bytes = 0;
}
