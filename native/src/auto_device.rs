//! `auto_device()`: `Device::Auto` over the best GPU this build can open.

use fusegraph_core::Device;

/// Opens the best GPU this build supports — CUDA device 0 (feature `cuda`),
/// else the wgpu adapter (feature `wgpu`) — and returns [`Device::Auto`],
/// which then places each graph on the CPU or that GPU by the size of its
/// work (see [`fusegraph_core::auto`]). Never fails: when no GPU opens,
/// Auto runs everything on the CPU and says why, once, on stderr.
///
/// ```
/// let dev = fusegraph::auto_device();
/// let a = fusegraph::Tensor::ones([2, 2], fusegraph::DType::F32, &dev)?;
/// assert_eq!(a.add(&a)?.to_vec::<f32>()?, vec![2.0; 4]);
/// # Ok::<(), fusegraph::Error>(())
/// ```
pub fn auto_device() -> Device {
    if fusegraph_core::auto::gpu().is_some() {
        return Device::Auto;
    }
    let mut why: Vec<String> = Vec::new();
    #[cfg(feature = "cuda")]
    match crate::cuda::open(0) {
        Ok(_) => return Device::Auto,
        Err(e) => why.push(format!("cuda: {e}")),
    }
    #[cfg(feature = "wgpu")]
    match Device::wgpu_blocking() {
        Ok(_) => return Device::Auto,
        Err(e) => why.push(format!("wgpu: {e}")),
    }
    if why.is_empty() {
        why.push("built without the `cuda` and `wgpu` features".into());
    }
    fusegraph_core::auto::record_no_gpu(&why.join("; "));
    Device::Auto
}
