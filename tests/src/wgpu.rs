//! The wgpu device for the conformance suite: opened once per test binary.
//! Without an adapter the suite is skipped, unless `FUSEGRAPH_REQUIRE_WGPU=1`
//! (set in CI, where Mesa's lavapipe provides one), which makes a missing
//! adapter a failure.

use std::sync::OnceLock;

use fusegraph_core::Device;

/// `Some(Device::Wgpu)` once the adapter is open; `None` when there is none.
///
/// # Panics
/// When no adapter opens and `FUSEGRAPH_REQUIRE_WGPU=1`.
pub fn wgpu_device() -> Option<Device> {
    static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();
    let opened = DEVICE.get_or_init(|| Device::wgpu_blocking().map_err(|e| e.to_string()));
    match opened {
        Ok(d) => Some(*d),
        Err(e) if std::env::var("FUSEGRAPH_REQUIRE_WGPU").is_ok_and(|v| v == "1") => panic!(
            "FUSEGRAPH_REQUIRE_WGPU=1 but no wgpu adapter opened: {e} \
             (install Mesa's Vulkan drivers, e.g. mesa-vulkan-drivers, for lavapipe)"
        ),
        Err(_) => None,
    }
}
