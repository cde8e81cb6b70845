//! Adapter and device set-up: one instance, the high-performance adapter,
//! a device with exactly the adapter's limits (so the fuser can bind as many
//! buffers as the hardware allows) and the features the renderer uses.
//! Device loss and errors outside any error scope are recorded here and
//! turned into [`Error`]s by the next call.

use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// The opened device and what it granted.
pub(crate) struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    /// Set by the device-lost callback: why the device went away.
    lost: Arc<Mutex<Option<String>>>,
    /// An error no scope caught (the only route on the web, where scopes
    /// resolve asynchronously): reported by the next call.
    uncaptured: Arc<Mutex<Option<wgpu::Error>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("adapter", &self.info.name)
            .finish()
    }
}

fn unavailable(why: String) -> Error {
    Error::DeviceUnavailable {
        op: "Device::wgpu",
        device: "wgpu".into(),
        why,
    }
}

impl Gpu {
    /// Opens the adapter and device. `WGPU_BACKEND` (e.g. `vulkan`) narrows
    /// the backends tried.
    pub async fn open() -> Result<Gpu> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
        desc.flags = wgpu::InstanceFlags::empty();
        let instance = wgpu::Instance::new(desc);
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
                apply_limit_buckets: false,
            })
            .await
            .map_err(|e| unavailable(format!("no adapter: {e}")))?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        // Only what the renderer uses: f16 arithmetic and, natively,
        // subgroup operations when present. In the browser the WGSL goes to
        // the browser's own compiler, whose subgroup builtins lag naga's.
        // Timestamp queries (native) time kernels for the profiler.
        let wanted = if cfg!(target_arch = "wasm32") {
            wgpu::Features::SHADER_F16
        } else {
            wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY
        };
        let features = adapter.features() & wanted;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("fusegraph"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| unavailable(format!("adapter {} refused a device: {e}", info.name)))?;
        let lost = Arc::new(Mutex::new(None));
        let lost_cb = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut l) = lost_cb.lock() {
                l.get_or_insert(format!("{reason:?}: {message}"));
            }
        });
        let uncaptured = Arc::new(Mutex::new(None));
        let uncaptured_cb = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut u) = uncaptured_cb.lock() {
                u.get_or_insert(e);
            }
        }));
        Ok(Gpu {
            limits: device.limits(),
            features: device.features(),
            device,
            queue,
            info,
            lost,
            uncaptured,
        })
    }

    pub fn has_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
    }

    pub fn has_subgroups(&self) -> bool {
        self.features.contains(wgpu::Features::SUBGROUP)
    }

    /// An error when the device was lost or an earlier uncaught error is pending.
    pub fn check(&self, op: &'static str) -> Result<()> {
        if let Some(why) = self.lost.lock().ok().and_then(|l| l.clone()) {
            return Err(Error::DeviceLost {
                op,
                device: format!("wgpu ({})", self.info.name),
                why,
            });
        }
        if let Some(e) = self.uncaptured.lock().ok().and_then(|mut u| u.take()) {
            return Err(self.convert(op, 0, e));
        }
        Ok(())
    }

    /// A wgpu error as fusegraph's: out-of-memory stays recognisable.
    pub fn convert(&self, op: &'static str, bytes: u64, e: wgpu::Error) -> Error {
        // The top-level message is generic ("Validation Error"); the causes say what failed.
        let mut message = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            message.push_str(": ");
            message.push_str(&c.to_string());
            cause = c.source();
        }
        if let wgpu::Error::Validation { description, .. } = &e {
            if !message.contains(description.as_str()) {
                message.push_str(": ");
                message.push_str(description);
            }
        }
        match e {
            wgpu::Error::OutOfMemory { .. } => Error::OutOfMemory {
                op,
                device: format!("wgpu ({})", self.info.name),
                bytes,
                why: message,
            },
            _ => Error::Backend { op, message },
        }
    }

    /// Runs `f` inside out-of-memory and validation error scopes and turns
    /// what they caught into an error naming `op`. Natively the scopes
    /// resolve at once; in the browser they cannot be awaited from this
    /// synchronous path, so errors arrive through the uncaptured-error
    /// handler and are reported by the next call.
    pub fn scoped<T>(&self, op: &'static str, bytes: u64, f: impl FnOnce() -> T) -> Result<T> {
        self.check(op)?;
        #[cfg(not(target_arch = "wasm32"))]
        {
            let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            let out = f();
            let v = pollster::block_on(validation.pop());
            let o = pollster::block_on(oom.pop());
            if let Some(e) = o.or(v) {
                return Err(self.convert(op, bytes, e));
            }
            self.check(op)?;
            Ok(out)
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = bytes;
            Ok(f())
        }
    }

    /// Blocks until every submission has finished (natively; the browser
    /// polls on its own).
    pub fn wait(&self, op: &'static str) -> Result<()> {
        self.check(op)?;
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| Error::Backend {
                op,
                message: format!("waiting for the GPU: {e}"),
            })?;
        self.check(op)
    }

    /// Test hook: destroys the device so that every later call reports
    /// [`Error::DeviceLost`].
    pub fn destroy(&self) {
        self.device.destroy();
        if let Ok(mut l) = self.lost.lock() {
            l.get_or_insert("the device was destroyed".into());
        }
    }
}
