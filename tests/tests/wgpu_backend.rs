//! Facts of the wgpu backend itself (the shared conformance suite covers the
//! ops): granted limits, dtype refusals, WGSL validation errors, device loss,
//! out-of-memory, the buffer pool and pipeline cache, and dispatches wider
//! than 65535 workgroups. Skipped (with a message) without an adapter unless
//! `FUSEGRAPH_REQUIRE_WGPU=1`.
#![cfg(feature = "wgpu")]

use fusegraph_core::backend::cpu::CpuStorage;
use fusegraph_core::backend::wgpu::{current, WgpuBackend};
use fusegraph_core::backend::Backend;
use fusegraph_core::{DType, Device, Error, Result, Tensor};
use fusegraph_tests::*;

fn dev() -> Option<(Device, std::sync::Arc<WgpuBackend>)> {
    let d = available("wgpu", wgpu_device())?;
    Some((d, current()?))
}

macro_rules! dev {
    () => {
        match dev() {
            Some(x) => x,
            None => return Ok(()),
        }
    };
}

#[test]
fn limits_follow_the_granted_storage_buffers() -> Result<()> {
    let (d, be) = dev!();
    let details = be.details();
    eprintln!("adapter: {}", be.describe());
    let l = fusegraph_core::runtime::limits_for(d)?;
    assert_eq!(
        l.max_kernel_args,
        details.max_storage_buffers_per_shader_stage as usize - 1
    );
    assert!(l.fuse);
    assert_eq!(
        be.render_options().max_storage_buffers,
        details.max_storage_buffers_per_shader_stage
    );
    Ok(())
}

#[test]
fn f64_is_refused_with_a_clear_error() -> Result<()> {
    let (d, _) = dev!();
    match Tensor::from_vec(vec![1.0f64, 2.0], [2], &d) {
        Err(Error::UnsupportedDType {
            dtype: DType::F64,
            why,
            ..
        }) => assert!(why.contains("64-bit")),
        other => panic!("expected UnsupportedDType for an f64 upload, got {other:?}"),
    }
    assert_unsupported(&d, DType::F64);
    Ok(())
}

#[test]
fn f16_runs_with_shader_f16_and_is_a_clear_error_without() -> Result<()> {
    let (d, be) = dev!();
    let x = leaf(&[0.5, -1.25, 3.0], &[3], DType::F16, &d);
    if be.render_options().shader_f16 {
        let y = x?.mul_scalar(2.0)?;
        assert_eq!(y.to_vec_f64()?, vec![1.0, -2.5, 6.0]);
    } else {
        eprintln!("adapter has no shader-f16: checking the error path");
        // The upload of f16 data works (it is only bytes); computing with it does not.
        let r = x?.mul_scalar(2.0)?.to_vec_f64();
        match r {
            Err(Error::UnsupportedDType {
                dtype: DType::F16,
                why,
                ..
            }) => assert!(why.contains("shader-f16"), "{why}"),
            other => panic!("expected UnsupportedDType for f16 without shader-f16, got {other:?}"),
        }
        assert_unsupported(&d, DType::F16);
    }
    Ok(())
}

#[test]
fn invalid_wgsl_is_an_error_naming_the_kernel() -> Result<()> {
    let (_, be) = dev!();
    let bad = "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n\
               @compute @workgroup_size(1) fn main() { o[0] = undefined_name; }\n";
    match be.compile_wgsl("fg_broken_test", bad, "main", 1) {
        Err(Error::Backend {
            op: "compile_wgsl",
            message,
        }) => {
            assert!(message.contains("fg_broken_test"), "{message}");
            assert!(
                message.contains("undefined_name") || message.to_lowercase().contains("valid"),
                "{message}"
            );
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
    let good = "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n\
                @compute @workgroup_size(1) fn main() { o[0] = 1.0; }\n";
    be.compile_wgsl("fg_good_test", good, "main", 1)?;
    Ok(())
}

#[test]
fn a_lost_device_is_an_error_not_a_panic() -> Result<()> {
    let Some(_) = dev() else { return Ok(()) };
    // A second device of the same adapter, so the shared one stays usable.
    let be = WgpuBackend::new_blocking()?;
    let s = be.upload(&CpuStorage::F32(vec![1.0, 2.0]))?;
    assert_eq!(be.download(&s)?, CpuStorage::F32(vec![1.0, 2.0]));
    be.lose_device();
    match be.upload(&CpuStorage::F32(vec![1.0])) {
        Err(Error::DeviceLost { .. }) => {}
        other => panic!("expected DeviceLost after the device was destroyed, got {other:?}"),
    }
    assert!(matches!(be.download(&s), Err(Error::DeviceLost { .. })));
    assert!(matches!(be.synchronize(), Err(Error::DeviceLost { .. })));
    Ok(())
}

#[test]
fn a_buffer_past_the_binding_limit_is_out_of_memory() -> Result<()> {
    let (d, be) = dev!();
    let max = be
        .details()
        .max_storage_buffer_binding_size
        .min(be.details().max_buffer_size);
    // One f32 past what a kernel can bind (stays below the renderer's 2^31 element cap when possible).
    let n = (max / 4 + 1) as usize;
    if n > i32::MAX as usize {
        eprintln!(
            "binding limit {max} bytes exceeds 2^31 f32 elements: the renderer's cap applies first"
        );
        return Ok(());
    }
    let t = Tensor::zeros([n], DType::F32, &d)?;
    match t.realize() {
        Err(Error::OutOfMemory { bytes, .. }) => assert!(bytes > max),
        other => panic!("expected OutOfMemory for {n} f32, got {other:?}"),
    }
    // The device still works afterwards.
    assert_eq!(
        Tensor::ones([2], DType::F32, &d)?.to_vec::<f32>()?,
        vec![1.0, 1.0]
    );
    Ok(())
}

#[test]
fn freed_buffers_are_reused_and_pipelines_cached() -> Result<()> {
    let Some(_) = dev() else { return Ok(()) };
    // A private device, so kernels other tests compile at the same time do not count.
    let be = WgpuBackend::new_blocking()?;
    let data: Vec<f32> = (0..77_000).map(|i| (i as f32 * 0.37).sin()).collect();
    let x = Tensor::from_vec(data, [1000, 77], &Device::Cpu)?;
    let y = x.mul_scalar(3.0)?.sin()?.add_scalar(0.25)?;
    let compiled = fusegraph_core::runtime::compiled_for(std::slice::from_ref(&y), &be.limits())?;
    let walked = fusegraph_core::graph::build::walk(&[y.node().clone()]);
    let leaves = walked
        .leaf_storage
        .iter()
        .map(|s| Ok(std::sync::Arc::new(be.upload(s.cpu_or_err("test")?)?)))
        .collect::<Result<Vec<_>>>()?;
    let first = be.execute(&compiled.schedule, &leaves)?;
    assert_eq!(be.cached_pipelines(), compiled.schedule.steps.len());
    let got = be.download(&first[0])?;
    let parked = be.pooled_bytes();
    drop(first);
    assert!(
        be.pooled_bytes() > parked,
        "a dropped output parks its buffer"
    );
    let parked = be.pooled_bytes();
    let second = be.execute(&compiled.schedule, &leaves)?;
    assert_eq!(
        be.cached_pipelines(),
        compiled.schedule.steps.len(),
        "the same kernels compile once"
    );
    assert!(
        be.pooled_bytes() < parked,
        "the next run takes the parked buffer"
    );
    assert_eq!(be.download(&second[0])?, got, "same inputs, same bits");
    let want = fusegraph_core::backend::cpu::reference::evaluate(&y)?;
    let got: Vec<f64> = (0..got.len()).map(|i| got.get_f64(i)).collect();
    compare(
        "sin chain",
        &got,
        &want.iter().copied().collect::<Vec<_>>(),
        Tol::of(DType::F32).ops(3),
    )
    .map_err(|m| Error::Backend {
        op: "test",
        message: m,
    })?;
    Ok(())
}

#[test]
fn dispatches_past_65535_workgroups_cover_every_element() -> Result<()> {
    let (d, _) = dev!();
    // 65536 * 256 + 3 elements: more elementwise workgroups than one dimension holds.
    let n = 65_536 * 256 + 3;
    let x = Tensor::arange(0.0, n as f64, 1.0, DType::I32, &d)?;
    let y = x.add_scalar(1.0)?.to_vec::<i32>()?;
    assert_eq!(y.len(), n);
    assert!(
        y.iter().enumerate().all(|(i, &v)| v == i as i32 + 1),
        "every element written once"
    );
    // 70,000 rows: more row-reduction workgroups than one dimension holds.
    let r = randn(&[70_000, 3], 4, DType::F32, &d)?;
    check_tol(
        "sum of 70000 rows",
        &r.sum(&[-1], false)?,
        Tol::of(DType::F32).reduce(3),
    )?;
    // 70,000 batches of a small matmul: batches stride along z.
    let a = randn(&[70_000, 2, 3], 5, DType::F32, &d)?;
    let b = randn(&[70_000, 3, 2], 6, DType::F32, &d)?;
    check_tol(
        "70000 batched matmuls",
        &a.matmul(&b)?,
        Tol::of(DType::F32).reduce(3),
    )?;
    Ok(())
}

#[test]
fn the_profiler_records_each_kernels_gpu_time() -> Result<()> {
    let (d, be) = dev!();
    let x = randn(&[512, 512], 7, DType::F32, &d)?;
    let w = randn(&[512, 512], 8, DType::F32, &d)?;
    // Three kernels: the matmul, the row softmax, and a full sum.
    let y = x.matmul(&w)?.softmax(-1)?.sum(&[], false)?;
    // With timestamp queries the durations are the GPU's own.
    eprintln!("timestamps: {}", be.details().timestamps);
    let kinds = check_profiled_kernels(d, &y)?;
    assert!(kinds.contains(&"matmul") && kinds.len() >= 2, "{kinds:?}");
    Ok(())
}
