//! Heap bytes held stay flat over 10,000 realize/read/drop cycles, counted
//! by a global allocator (exact, unlike RSS): after a warm-up, every byte a
//! cycle allocates is freed by the end of the cycle, whatever its data,
//! seeds or buffer sizes. This is the native twin of the npm leak check
//! (`wasm/npm/test/memory.test.js`), where wasm linear memory may not grow.
//!
//! One test function: the counter is process-wide, so the cases must not
//! run concurrently with each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use fusegraph_core::{DType, Device, Result, Tensor};

struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to `System` with the caller's arguments; the
// counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            HELD.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn held() -> isize {
    HELD.load(Ordering::Relaxed)
}

fn one() -> Result<Tensor> {
    Tensor::scalar(1.0, DType::F32, &Device::Cpu)
}

/// Realizes `t`, reads it back and checks every value is finite.
fn read(t: &Tensor) -> Result<Vec<f32>> {
    t.realize()?;
    let v = t.to_vec::<f32>()?;
    assert!(v.iter().all(|e| e.is_finite()), "{v:?}");
    Ok(v)
}

/// The npm leak check's cycles: JS data (new values every cycle) through
/// an elementwise chain; a seeded rand (a new seed every cycle: a new graph
/// every cycle) through an add; and a seeded rand through matmul, add, relu
/// and a row sum.
fn data_add_relu(i: usize) -> Result<()> {
    let y = Tensor::from_vec(vec![(i % 7) as f32; 4096], [64, 64], &Device::Cpu)?;
    let v = read(&y.add(&one()?)?.relu()?)?;
    assert_eq!(v[4095], (i % 7) as f32 + 1.0);
    Ok(())
}

fn rand_add(i: usize) -> Result<()> {
    let x = Tensor::rand([64, 64], i as u64, DType::F32, &Device::Cpu)?;
    read(&x.add(&one()?)?)?;
    Ok(())
}

fn rand_matmul_add_relu_sum(i: usize) -> Result<()> {
    let x = Tensor::rand([64, 64], i as u64, DType::F32, &Device::Cpu)?;
    read(&x.matmul(&x)?.add(&one()?)?.relu()?.sum(&[1], false)?)?;
    Ok(())
}

fn all_three(i: usize) -> Result<()> {
    data_add_relu(i)?;
    rand_add(i)?;
    rand_matmul_add_relu_sum(i)
}

/// Elementwise kernels big enough for the pool (1 MiB buffers) with data
/// made every cycle: pooled buffers are reused, not accumulated.
fn big_cycle(i: usize) -> Result<()> {
    let dev = Device::Cpu;
    let a = Tensor::from_vec(vec![(i % 5) as f32; 1 << 18], [512, 512], &dev)?;
    let b = a.mul(&Tensor::scalar(2.0, DType::F32, &dev)?)?.exp()?;
    b.realize()?;
    let s = b.sum(&[0, 1], false)?.item::<f32>()?;
    let want = (2.0 * (i % 5) as f32).exp() * (1 << 18) as f32;
    assert!(
        (s - want).abs() <= 1e-4 * want,
        "cycle {i}: {s}, want {want}"
    );
    Ok(())
}

fn check(what: &str, warm_up: usize, cycles: usize, f: impl Fn(usize) -> Result<()>) -> Result<()> {
    for i in 0..warm_up {
        f(i)?;
    }
    let before = held();
    let mut peak_growth = 0isize;
    for i in warm_up..warm_up + cycles {
        f(i)?;
        peak_growth = peak_growth.max(held() - before);
    }
    let after = held();
    eprintln!(
        "heap check ({what}): {cycles} cycles after {warm_up} of warm-up: heap held {before} -> {after} B \
         ({:.1} B/cycle, largest growth between cycles {peak_growth} B)",
        (after - before) as f64 / cycles as f64
    );
    if std::env::var_os("HEAP_FLAT_REPORT_ONLY").is_some() {
        return Ok(());
    }
    assert_eq!(
        after,
        before,
        "{what}: the heap held {} B more after {cycles} cycles",
        after - before
    );
    assert_eq!(
        peak_growth, 0,
        "{what}: the heap grew by {peak_growth} B between cycles"
    );
    Ok(())
}

#[test]
fn realize_read_drop_cycles_hold_the_heap_flat() -> Result<()> {
    check("tensor -> add -> relu", 500, 10_000, data_add_relu)?;
    check("rand -> add", 500, 10_000, rand_add)?;
    check(
        "rand -> matmul -> add -> relu -> sum",
        500,
        10_000,
        rand_matmul_add_relu_sum,
    )?;
    check("all three", 500, 10_000, all_three)?;
    check(
        "1 MiB elementwise with new data each cycle",
        50,
        500,
        big_cycle,
    )?;
    Ok(())
}
