//! A GPU lost under `Device::Auto`: the graph runs again on the CPU, the log
//! says so, Auto stops using that GPU, and data that lived only on it
//! reports `DeviceLost` instead of panicking. Its own test binary, since a
//! lost device stays lost for the whole process.

use fusegraph_core::auto;
use fusegraph_core::{DType, Device, Error, Result, Tensor};
use fusegraph_tests::*;

/// Marks `gpu` lost through its backend's test hook.
fn lose(gpu: Device) {
    match gpu {
        #[cfg(feature = "cuda")]
        Device::Cuda(_) => match fusegraph::cuda::backend_of(&gpu) {
            Ok(b) => b.lose_device(),
            Err(e) => panic!("no CUDA backend to lose: {e}"),
        },
        #[cfg(feature = "wgpu")]
        Device::Wgpu => match fusegraph_core::backend::wgpu::current() {
            Some(b) => b.lose_device(),
            None => panic!("no wgpu backend to lose"),
        },
        other => panic!("cannot lose {other}"),
    }
}

#[test]
fn a_lost_gpu_sends_auto_to_the_cpu_for_good() -> Result<()> {
    auto_device();
    let Some(gpu) = auto::gpu() else {
        eprintln!("skipped: Device::Auto has no GPU on this machine");
        return Ok(());
    };
    let host = |seed| randn(&[128, 128], seed, DType::F32, &Device::Cpu)?.to_device(&Device::Auto);
    let a = host(1)?;
    let on_gpu = a.matmul(&a)?;
    on_gpu.realize()?;

    lose(gpu);
    let before = auto::fallbacks();
    let b = host(2)?;
    let y = b.matmul(&b)?.relu()?;
    check_ops("matmul + relu after the GPU was lost", &y, 2)?;
    assert_eq!(auto::fallbacks(), before + 1);
    let line = auto::last_fallback().unwrap_or_default();
    assert!(
        line.contains("lost") && line.contains("from now on"),
        "{line}"
    );
    assert_eq!(auto::gpu(), None, "Auto retired the lost GPU");

    // Later graphs (this one is over the threshold) go straight to the
    // CPU: no new fallback.
    let z = y.sqrt()?.add(&b)?;
    check_ops("the next graph", &z, 2)?;
    assert_eq!(auto::fallbacks(), before + 1);

    // A result that lived only on the lost GPU is an error, not a panic.
    match on_gpu.to_vec::<f32>() {
        Err(Error::DeviceLost { .. }) => {}
        other => panic!("expected DeviceLost for data on the lost GPU, got {other:?}"),
    }
    // And the CPU is as usable as before.
    let c = Tensor::ones([4], DType::F32, &Device::Cpu)?;
    assert_eq!(c.add(&c)?.to_vec::<f32>()?, vec![2.0; 4]);
    Ok(())
}
