//! `Device::Auto`: placement by work size, inputs moved once, and the CPU
//! fallback when the GPU fails (injected out-of-memory). The tests share one
//! process-wide policy and fault table, so each holds `serial()`.
//!
//! They need a GPU for Auto to choose (wgpu on lavapipe in CI, CUDA on the
//! GPU machine); without one each prints that it was skipped.

use std::sync::{Mutex, MutexGuard};

use fusegraph_core::auto::{self, AutoPolicy};
use fusegraph_core::backend::fault;
use fusegraph_core::{DType, Device, Error, Result, Tensor};
use fusegraph_tests::*;

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The GPU Auto uses here, or `None` (the test is skipped).
fn gpu() -> Option<Device> {
    auto_device();
    let g = auto::gpu();
    if g.is_none() {
        eprintln!("skipped: Device::Auto has no GPU on this machine");
    }
    g
}

/// A host tensor handed to Auto (its data starts on the CPU).
fn host(shape: &[usize], seed: u64) -> Result<Tensor> {
    randn(shape, seed, DType::F32, &Device::Cpu)?.to_device(&Device::Auto)
}

/// Where `t`'s data lives once realized.
fn placed(t: &Tensor) -> Result<Device> {
    t.realize()?;
    t.node()
        .storage()
        .map(|s| s.device())
        .ok_or(Error::Backend {
            op: "test",
            message: "not realized".into(),
        })
}

#[test]
fn small_graphs_run_on_the_cpu_and_large_ones_on_the_gpu() -> Result<()> {
    let _s = serial();
    let Some(gpu) = gpu() else { return Ok(()) };
    assert_eq!(auto::policy().min_gpu_flops, AUTO_TEST_MIN_GPU_FLOPS);
    let (cpu0, gpu0) = auto::placements();

    // 2·8³ = 1024 FLOP: under the threshold, inputs on the host.
    let a = host(&[8, 8], 1)?;
    let small = a.matmul(&a)?;
    assert_eq!(placed(&small)?, Device::Cpu);
    check("8×8 matmul on Auto", &small)?;

    // 2·128³ ≈ 4.2 MFLOP: over it.
    let b = host(&[128, 128], 2)?;
    let large = b.matmul(&b.t()?)?.relu()?;
    assert_eq!(placed(&large)?, gpu);
    check_ops("128×128 matmul + relu on Auto", &large, 2)?;

    let (cpu1, gpu1) = auto::placements();
    assert!(cpu1 > cpu0 && gpu1 > gpu0, "{cpu0}/{gpu0} -> {cpu1}/{gpu1}");
    Ok(())
}

#[test]
fn small_work_stays_where_its_large_inputs_are() -> Result<()> {
    let _s = serial();
    let Some(gpu) = gpu() else { return Ok(()) };
    let b = host(&[128, 128], 3)?;
    let on_gpu = b.matmul(&b)?;
    assert_eq!(placed(&on_gpu)?, gpu);

    // One row of a GPU-resident result: 128 FLOP, but its input is there.
    let row = on_gpu.narrow(0, 5, 1)?.relu()?;
    assert_eq!(
        placed(&row)?,
        gpu,
        "small work on GPU data stays on the GPU"
    );
    check("relu of a row of a GPU result", &row)?;

    // A small host input does not pull the work back.
    let bias = host(&[1, 128], 4)?;
    let biased = on_gpu.narrow(0, 5, 1)?.add(&bias)?;
    assert_eq!(placed(&biased)?, gpu);
    check("row + small host bias", &biased)?;

    // Large inputs on both sides and little work: the CPU, which reads the
    // GPU result back once and keeps that copy.
    let other = host(&[128, 128], 5)?;
    let mixed = other.narrow(0, 0, 1)?.add(&on_gpu.narrow(0, 0, 1)?)?;
    assert_eq!(placed(&mixed)?, Device::Cpu);
    check("row of host data + row of GPU data", &mixed)?;
    Ok(())
}

#[test]
fn an_input_moved_to_the_gpu_stays_there_for_the_next_graph() -> Result<()> {
    let _s = serial();
    let Some(gpu) = gpu() else { return Ok(()) };
    let x = host(&[96, 96], 6)?;
    assert_eq!(placed(&x)?, Device::Cpu);
    let y = x.matmul(&x)?;
    assert_eq!(placed(&y)?, gpu);
    assert_eq!(placed(&x)?, gpu, "the leaf now holds its GPU copy");
    let z = x.matmul(&y)?;
    assert_eq!(placed(&z)?, gpu);
    check_ops("x @ (x @ x) with x moved once", &z, 2)?;
    // Reading the data back works wherever it lives.
    assert_eq!(x.to_vec::<f32>()?.len(), 96 * 96);
    let back = x.to_device(&Device::Cpu)?;
    assert_eq!(placed(&back)?, Device::Cpu);
    Ok(())
}

#[test]
fn dtypes_the_gpu_cannot_hold_stay_on_the_cpu() -> Result<()> {
    let _s = serial();
    let Some(gpu) = gpu() else { return Ok(()) };
    let Ok(backend) = fusegraph_core::backend::get(gpu) else {
        return Ok(());
    };
    let a = randn(&[128, 128], 7, DType::F64, &Device::Cpu)?.to_device(&Device::Auto)?;
    let before = auto::fallbacks();
    let y = a.matmul(&a)?;
    let want = if backend.supports_dtype(DType::F64) {
        gpu
    } else {
        Device::Cpu
    };
    assert_eq!(placed(&y)?, want);
    assert_eq!(
        auto::fallbacks(),
        before,
        "an unsupported dtype is placed, not failed over"
    );
    check("f64 matmul on Auto", &y)?;
    Ok(())
}

#[test]
fn injected_out_of_memory_falls_back_to_the_cpu_and_says_so() -> Result<()> {
    let _s = serial();
    let Some(gpu) = gpu() else { return Ok(()) };
    let a = host(&[128, 128], 8)?;
    let before = auto::fallbacks();
    fault::fail_allocations(gpu, 1);
    let y = a.matmul(&a)?.tanh()?;
    let at = placed(&y);
    fault::clear();
    assert_eq!(at?, Device::Cpu, "the graph ran again on the CPU");
    check_ops("matmul + tanh after an injected GPU OOM", &y, 2)?;
    assert_eq!(auto::fallbacks(), before + 1);
    let line = auto::last_fallback().unwrap_or_default();
    assert!(
        line.contains("out of memory") && line.contains("this time"),
        "{line}"
    );
    // The GPU is still Auto's: the next large graph runs there.
    assert_eq!(auto::gpu(), Some(gpu));
    let z = a.matmul(&a)?;
    assert_eq!(placed(&z)?, gpu);
    check("the next matmul, on the GPU again", &z)?;
    Ok(())
}

#[test]
fn out_of_memory_on_an_explicit_gpu_is_an_error_and_the_device_stays_usable() -> Result<()> {
    let _s = serial();
    let Some(gpu) = gpu() else { return Ok(()) };
    let a = randn(&[64, 64], 9, DType::F32, &gpu)?;
    fault::fail_allocations(gpu, 1);
    let failed = a.matmul(&a)?.to_vec::<f32>();
    fault::clear();
    match failed {
        Err(Error::OutOfMemory { device, why, .. }) => {
            assert_eq!(device, gpu.name());
            assert!(why.contains("injected"), "{why}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    let y = a.matmul(&a)?;
    check("the same matmul after the failure", &y)?;
    Ok(())
}

#[test]
fn a_gpu_that_is_not_open_leaves_auto_on_the_cpu() -> Result<()> {
    let _s = serial();
    let Some(_) = gpu() else { return Ok(()) };
    let saved = auto::policy();
    auto::set_policy(AutoPolicy {
        gpu: Some(Device::Cuda(97)),
        ..saved
    });
    let a = host(&[128, 128], 10)?;
    let y = a.matmul(&a)?;
    let at = placed(&y);
    auto::set_policy(saved);
    assert_eq!(at?, Device::Cpu);
    check("matmul with Auto pinned to a GPU that is not open", &y)?;
    Ok(())
}
