//! GPU timestamps around one compute pass, for the profiler. With the
//! adapter's `timestamp-query` feature, a profiled kernel's duration is the
//! GPU's own (from the pass's first dispatch to its last write), so it
//! excludes the host's submission and the wait for the result, which the
//! host clock around `submit` + `wait` includes (tens of microseconds per
//! kernel on a discrete GPU). Native only: the browser quantizes timestamps
//! and cannot block for a read, so the web build has no timer (an empty
//! type, which keeps the code out of the `.wasm`).

#[cfg(target_arch = "wasm32")]
pub(crate) enum PassTimer {}

#[cfg(target_arch = "wasm32")]
impl PassTimer {
    pub(crate) fn writes(&self) -> wgpu::ComputePassTimestampWrites<'_> {
        match *self {}
    }

    pub(crate) fn resolve(&self, _: &mut wgpu::CommandEncoder) {
        match *self {}
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) use native::PassTimer;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use super::super::context::Gpu;
    use super::super::transfer::read_blocking;
    use crate::error::Result;

    /// Two timestamp queries (start and end of a pass) and the buffer they are
    /// resolved into.
    pub(crate) struct PassTimer {
        set: wgpu::QuerySet,
        resolved: wgpu::Buffer,
        /// Nanoseconds per timestamp tick.
        period_ns: f64,
    }

    /// Bytes of the two resolved `u64` timestamps.
    const RESOLVED_BYTES: u64 = 16;

    impl PassTimer {
        /// A timer, or `None` when the device has no timestamp queries.
        pub(crate) fn new(gpu: &Gpu) -> Option<PassTimer> {
            if !gpu.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
                return None;
            }
            let set = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("fusegraph pass timer"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            });
            let resolved = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("fusegraph pass timer"),
                size: RESOLVED_BYTES,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            Some(PassTimer {
                set,
                resolved,
                period_ns: f64::from(gpu.queue.get_timestamp_period()),
            })
        }

        /// The pass descriptor's timestamp writes: one query at its start, one at its end.
        pub(crate) fn writes(&self) -> wgpu::ComputePassTimestampWrites<'_> {
            wgpu::ComputePassTimestampWrites {
                query_set: &self.set,
                beginning_of_pass_write_index: Some(0),
                end_of_pass_write_index: Some(1),
            }
        }

        /// Records the resolution of both queries (after the pass, same encoder).
        pub(crate) fn resolve(&self, enc: &mut wgpu::CommandEncoder) {
            enc.resolve_query_set(&self.set, 0..2, &self.resolved, 0);
        }

        /// Waits for the pass and returns its GPU duration in nanoseconds.
        pub(crate) fn read_ns(&self, gpu: &Gpu) -> Result<u64> {
            let raw = read_blocking(gpu, &self.resolved, RESOLVED_BYTES)?;
            let tick = |i: usize| {
                raw.get(i * 8..i * 8 + 8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map_or(0, u64::from_le_bytes)
            };
            let ticks = tick(1).saturating_sub(tick(0));
            Ok((ticks as f64 * self.period_ns).round() as u64)
        }
    }
}
