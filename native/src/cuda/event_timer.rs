//! CUDA events around one launch, for the profiler: the GPU's own time of
//! the work queued between them, without the host's launch and wait (which
//! the host clock around a launch and a synchronize includes, several
//! microseconds per kernel). Resolution is about half a microsecond.

use cudarc::driver::{result, sys};

use fusegraph_core::{Error, Result};

use super::error;

/// A pair of timing events, reused from kernel to kernel.
pub(crate) struct EventTimer {
    start: sys::CUevent,
    end: sys::CUevent,
    device: String,
}

impl EventTimer {
    pub(crate) fn new(device: &str) -> Result<EventTimer> {
        let make = || result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = make().map_err(|e| error::driver("cuda profiler", device, e))?;
        let end = match make() {
            Ok(e) => e,
            Err(e) => {
                // SAFETY: created above and not recorded anywhere.
                let _ = unsafe { result::event::destroy(start) };
                return Err(error::driver("cuda profiler", device, e));
            }
        };
        Ok(EventTimer {
            start,
            end,
            device: device.to_string(),
        })
    }

    /// Runs `launch` (work queued on `stream`) between the two events, waits
    /// for the second, and returns the GPU time between them in nanoseconds.
    pub(crate) fn time(
        &self,
        stream: sys::CUstream,
        launch: impl FnOnce() -> Result<()>,
    ) -> Result<u64> {
        let err = |e| error::driver("cuda profiler", &self.device, e);
        // SAFETY: both events are live; `stream` is the caller's live stream.
        unsafe { result::event::record(self.start, stream) }.map_err(err)?;
        launch()?;
        let ms = unsafe {
            result::event::record(self.end, stream)
                .and_then(|()| result::event::synchronize(self.end))
                .and_then(|()| result::event::elapsed(self.start, self.end))
        }
        .map_err(err)?;
        if !ms.is_finite() || ms < 0.0 {
            return Err(Error::Backend {
                op: "cuda profiler",
                message: format!("{}: events gave {ms} ms", self.device),
            });
        }
        Ok((f64::from(ms) * 1e6).round() as u64)
    }
}

impl Drop for EventTimer {
    fn drop(&mut self) {
        // SAFETY: both events were created by `new` and are destroyed once.
        unsafe {
            let _ = result::event::destroy(self.start);
            let _ = result::event::destroy(self.end);
        }
    }
}
