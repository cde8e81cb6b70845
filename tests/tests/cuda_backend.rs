//! CUDA-only checks beyond the conformance suite: the cuBLASLt paths
//! (fused epilogues, scratch + generated epilogue, transposes as flags,
//! batched), the generated-kernel fallback, TF32 opt-in, graph capture and
//! replay, and the caching allocator. Without a GPU each test prints
//! `skipped: cuda not available` (and the error test checks the message).
#![cfg(feature = "cuda")]

use fusegraph::cuda::{self, Precision};
use fusegraph::CudaDevice;
use fusegraph_core::{DType, Device, Error, Result, Tensor};
use fusegraph_tests::*;

fn dev() -> Option<Device> {
    available("cuda", cuda_device())
}

/// The matmul precision is process-wide: tests that run f32 matmuls hold
/// this while the TF32 test flips it.
static PRECISION_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn precision_lock() -> std::sync::MutexGuard<'static, ()> {
    PRECISION_LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn missing_gpu_is_a_clear_error() {
    if cuda_device().is_some() {
        eprintln!("skipped: a CUDA GPU is present");
        return;
    }
    match Device::cuda(0) {
        Err(Error::DeviceUnavailable { device, .. }) => assert_eq!(device, "cuda:0"),
        other => panic!("expected DeviceUnavailable, got {other:?}"),
    }
}

#[test]
fn matmul_epilogues_fused_and_generated() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let _p = precision_lock();
    for dt in [DType::F32, DType::F16, DType::BF16, DType::F64] {
        let a = randn(&[33, 70], 1, dt, &d)?;
        let b = randn(&[70, 45], 2, dt, &d)?;
        let bias = randn(&[45], 3, dt, &d)?;
        let t = Tol::of(dt).ops(3).reduce(70);
        check_tol("bias+relu", &a.matmul(&b)?.add(&bias)?.relu()?, t)?;
        check_tol(
            "bias+gelu_tanh",
            &a.matmul(&b)?.add(&bias)?.gelu_tanh()?,
            t.ops(2),
        )?;
        check_tol(
            "scale+exp (scratch epilogue)",
            &a.matmul(&b)?.mul_scalar(0.05)?.exp()?,
            t.ops(2),
        )?;
        check_tol("a.t() @ b.t()", &b.t()?.matmul(&a.t()?)?, t)?;
        let residual = randn(&[33, 45], 4, dt, &d)?;
        check_tol("residual", &a.matmul(&b)?.add(&residual)?, t)?;
    }
    Ok(())
}

#[test]
fn batched_and_broadcast_batched_matmul() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let _p = precision_lock();
    let a = randn(&[5, 17, 32], 1, DType::F32, &d)?;
    let b = randn(&[5, 32, 9], 2, DType::F32, &d)?;
    let w = randn(&[32, 9], 3, DType::F32, &d)?;
    let t = Tol::of(DType::F32).reduce(32);
    check_tol("bmm", &a.matmul(&b)?, t)?;
    check_tol("bmm with a shared rhs", &a.matmul(&w)?, t)?;
    check_tol(
        "bmm of transposed batches",
        &b.transpose(1, 2)?.matmul(&a.transpose(1, 2)?)?,
        t,
    )?;
    Ok(())
}

#[test]
fn integer_and_doubly_strided_matmul_use_the_generated_kernel() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let _p = precision_lock();
    let a = randint(&[12, 20], 1, -5, 5, &d)?;
    let b = randint(&[20, 7], 2, -5, 5, &d)?;
    check_tol("i32 matmul", &a.matmul(&b)?, Tol::of(DType::I32))?;
    // Every other row and column: no unit stride in either dim.
    let big = randn(&[24, 40], 3, DType::F32, &d)?;
    let strided = big.as_strided(&[12, 20], &[80, 2], 0)?;
    let r = randn(&[20, 6], 4, DType::F32, &d)?;
    check_tol(
        "strided lhs",
        &strided.matmul(&r)?,
        Tol::of(DType::F32).reduce(20),
    )?;
    Ok(())
}

#[test]
fn tf32_is_opt_in() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let _p = precision_lock();
    let a = randn(&[256, 256], 1, DType::F32, &d)?;
    let b = randn(&[256, 256], 2, DType::F32, &d)?;
    assert_eq!(cuda::matmul_precision(), Precision::Highest);
    let full = a.matmul(&b)?.to_vec::<f32>()?;
    cuda::set_matmul_precision(Precision::Tf32);
    let tf = a.matmul(&b)?.to_vec::<f32>();
    cuda::set_matmul_precision(Precision::Highest);
    let tf = tf?;
    let (mut num, mut den) = (0f64, 0f64);
    for (x, y) in full.iter().zip(&tf) {
        num += ((x - y) as f64).powi(2);
        den += (*x as f64).powi(2);
    }
    let rel = (num / den).sqrt();
    assert!(rel > 0.0 && rel < 1e-2, "TF32 relative error {rel:e}");
    Ok(())
}

#[test]
fn captured_graph_replays_into_the_same_tensors() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let x = randn(&[4096], 1, DType::F32, &d)?;
    let start = x.to_vec::<f32>()?;
    let step = cuda::capture(&d, || {
        let mut y = x.clone();
        for _ in 0..50 {
            y = y.mul_scalar(0.5)?.add_scalar(1.0)?;
            y.realize()?;
        }
        Ok(y)
    })?;
    assert!(step.kernels() >= 50, "{} graph nodes", step.kernels());
    for _ in 0..3 {
        step.replay()?;
    }
    let got = step.value().to_vec::<f32>()?;
    for (g, s) in got.iter().zip(&start) {
        let mut want = *s as f64;
        for _ in 0..50 {
            want = want * 0.5 + 1.0;
        }
        assert!(
            (*g as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
            "{g} vs {want}"
        );
    }
    Ok(())
}

#[test]
fn uploads_inside_a_capture_are_errors() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let r = cuda::capture(&d, || {
        Tensor::from_vec(vec![1.0f32; 4], [4], &d)?.to_vec::<f32>()
    });
    assert!(r.is_err(), "reading back inside a capture must fail");
    // The device still works afterwards.
    let x = randn(&[8], 2, DType::F32, &d)?;
    check("after a failed capture", &x.relu()?)?;
    Ok(())
}

#[test]
fn freed_buffers_are_reused() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let be = cuda::backend_of(&d)?;
    let x = randn(&[1 << 20], 1, DType::F32, &d)?;
    let y = x.exp()?;
    y.realize()?;
    drop(y);
    let (held, _) = be.memory_stats();
    for _ in 0..20 {
        let y = x.exp()?;
        y.realize()?;
    }
    let (held2, cached) = be.memory_stats();
    assert!(
        held2 <= held + (8 << 20),
        "pool grew from {held} to {held2} bytes"
    );
    assert!(
        cached >= 4 << 20,
        "a freed 4 MiB output is cached ({cached} bytes)"
    );
    Ok(())
}

#[test]
fn the_profiler_records_each_kernels_gpu_time() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let _p = precision_lock();
    let x = Tensor::randn([512, 512], 7, DType::F32, &d)?;
    let w = Tensor::randn([512, 512], 8, DType::F32, &d)?;
    x.realize()?;
    w.realize()?;
    // A cuBLASLt matmul, then generated kernels (the row softmax and a sum).
    let y = x.matmul(&w)?.softmax(-1)?.sum(&[], false)?;
    // CUDA events time each kernel on the GPU.
    let kinds = check_profiled_kernels(d, &y)?;
    assert!(kinds.contains(&"matmul") && kinds.len() >= 2, "{kinds:?}");
    check_tol("profiled softmax sum", &y, Tol::of(DType::F32).reduce(512))?;
    Ok(())
}
