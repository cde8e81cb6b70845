//! CUDA Graphs: record the kernels a closure launches once, then replay
//! them with one launch. Many small kernels (an eager loop of elementwise
//! ops, a decode step) cost one graph launch instead of one driver call
//! each.
//!
//! ```no_run
//! use fusegraph::{CudaDevice, DType, Device, Tensor};
//! let dev = Device::cuda(0)?;
//! let x = Tensor::randn([1024], 1, DType::F32, &dev)?;
//! x.realize()?; // inputs live on the device before capture
//! let step = fusegraph::cuda::capture(&dev, || {
//!     let y = x.mul_scalar(2.0)?.relu()?;
//!     y.realize()?;
//!     Ok(y)
//! })?;
//! step.replay()?; // runs the recorded kernels again, into the same buffers
//! let y: Vec<f32> = step.value().to_vec()?;
//! # Ok::<(), fusegraph::Error>(())
//! ```
//!
//! A training step replays the same way once every tensor it carries to
//! the next step stays in its buffer: take one ordinary step (so the
//! optimiser's state exists), then record a step that uses
//! [`Optimizer::step_in_place`](fusegraph_core::optim::Optimizer::step_in_place)
//! (the new parameters and moments are copied into the old buffers, a copy
//! the graph records) and [`Tensor::assign`](fusegraph_core::Tensor::assign) for anything else that
//! carries over (batch-norm running statistics). New batches go into the
//! step's input tensors with `assign` before each replay; the loss the
//! closure returned holds the latest replay's value.
//!
//! ```no_run
//! use fusegraph::nn::{Linear, Param};
//! use fusegraph::optim::{Optimizer, Sgd};
//! use fusegraph::{autograd, CudaDevice, DType, Device, Tensor};
//! let dev = Device::cuda(0)?;
//! let net = Linear::new(784, 10, true, 1, &dev)?;
//! let mut opt = Sgd::new(net.parameters(), 0.1, 0.9, 0.0);
//! let x = Tensor::randn([256, 784], 2, DType::F32, &dev)?;
//! let y = Tensor::from_vec(vec![3i32; 256], [256], &dev)?;
//! let train_step = |opt: &mut Sgd, in_place: bool| {
//!     let loss = net.forward(&x)?.cross_entropy(&y)?;
//!     let leaves = opt.leaves();
//!     let grads = autograd::grad(&loss, &leaves.iter().collect::<Vec<_>>())?;
//!     if in_place {
//!         opt.step_in_place(&grads, std::slice::from_ref(&loss))?;
//!     } else {
//!         opt.step(&grads, std::slice::from_ref(&loss))?;
//!     }
//!     Ok(loss)
//! };
//! train_step(&mut opt, false)?; // creates the momentum buffers
//! let step = fusegraph::cuda::capture(&dev, || train_step(&mut opt, true))?;
//! for _ in 0..100 {
//!     // x.assign(&next_batch)?;  (a realized tensor on the device)
//!     step.replay()?;
//! }
//! println!("loss {}", step.value().item::<f32>()?);
//! # Ok::<(), fusegraph::Error>(())
//! ```
//!
//! Hyper-parameters are read when the step is recorded: a replay keeps
//! the learning rate it was recorded with (record again to change it).
//!
//! Rules: inputs must already be on the device (no uploads or read-backs
//! while capturing; those are errors), and the buffers the closure
//! allocates belong to the graph until it is dropped, so each replay
//! rewrites the tensors the closure returned. While one thread captures,
//! other threads that use the device wait until the capture ends (their
//! work would otherwise be recorded into the graph).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use cudarc::driver::{result, sys};
use fusegraph_core::{Device, Result};

use super::alloc::CudaBuffer;
use super::backend::CudaBackend;
use super::error;

/// A recorded graph, its buffers, and what the closure returned.
pub struct Captured<T> {
    exec: sys::CUgraphExec,
    graph: sys::CUgraph,
    backend: Arc<CudaBackend>,
    kernels: usize,
    _buffers: Vec<CudaBuffer>,
    value: T,
}

// SAFETY: graph handles may be launched from any thread of the context.
unsafe impl<T: Send> Send for Captured<T> {}
unsafe impl<T: Sync> Sync for Captured<T> {}

impl<T> Captured<T> {
    /// Queues one more run of the recorded work (asynchronous, like any launch).
    pub fn replay(&self) -> Result<()> {
        let be = &self.backend;
        let _g = be.enter();
        be.bind()?;
        // SAFETY: the exec graph is live and belongs to this context.
        unsafe { result::graph::launch(self.exec, be.cu_stream()) }
            .map_err(|e| error::driver("cuda graph replay", &be.name, e))
    }

    /// What the closure returned (its tensors hold the latest replay's results).
    pub fn value(&self) -> &T {
        &self.value
    }

    /// Kernel nodes in the graph.
    pub fn kernels(&self) -> usize {
        self.kernels
    }
}

impl<T> Drop for Captured<T> {
    fn drop(&mut self) {
        let _ = self.backend.bind();
        // Buffers go back to the pool after the last replay has finished.
        let _ = self.backend.sync_stream();
        // SAFETY: created once in `capture`, destroyed once.
        unsafe {
            let _ = result::graph::exec_destroy(self.exec);
            let _ = result::graph::destroy(self.graph);
        }
    }
}

/// Records what `f` launches on `dev` into a CUDA graph, runs it once (so
/// the returned tensors hold results), and returns it for replay.
pub fn capture<T>(dev: &Device, f: impl FnOnce() -> Result<T>) -> Result<Captured<T>> {
    let be = super::backend_of(dev)?;
    be.bind()?;
    be.sync_stream()?;
    let stream = be.cu_stream();
    {
        // Other threads wait from here until the capture ends, so none of
        // their work lands in this graph.
        let _g = be.begin_capture_owner();
        be.pool.begin_capture();
        be.capturing.store(true, Ordering::Relaxed);
        // SAFETY: our live stream; relaxed mode lets allocation and module
        // loading (first use of a kernel) happen during the capture.
        if let Err(e) = unsafe {
            result::stream::begin_capture(
                stream,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
            )
        } {
            be.capturing.store(false, Ordering::Relaxed);
            drop(be.pool.end_capture());
            drop(_g);
            be.end_capture_owner();
            return Err(error::driver("cuda graph capture", &be.name, e));
        }
    }
    let value = f();
    let ended = {
        let _g = be.guard();
        // SAFETY: the capture begun above, on the same stream.
        let g = unsafe { result::stream::end_capture(stream) };
        be.capturing.store(false, Ordering::Relaxed);
        g
    };
    let buffers = be.pool.end_capture();
    be.end_capture_owner();
    let graph = ended.map_err(|e| error::driver("cuda graph capture", &be.name, e))?;
    let value = match value {
        Ok(v) => v,
        Err(e) => {
            // SAFETY: the graph just ended and is not used again.
            unsafe {
                let _ = result::graph::destroy(graph);
            }
            return Err(e);
        }
    };
    let mut nodes = 0usize;
    // SAFETY: a live graph; with a null array the call only counts nodes.
    unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes) };
    // SAFETY: a complete graph of this context.
    let exec = match unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) }
    {
        Ok(x) => x,
        Err(e) => {
            // SAFETY: not used again.
            unsafe {
                let _ = result::graph::destroy(graph);
            }
            return Err(error::driver("cuda graph instantiate", &be.name, e));
        }
    };
    let captured = Captured {
        exec,
        graph,
        backend: be,
        kernels: nodes,
        _buffers: buffers,
        value,
    };
    captured.replay()?;
    Ok(captured)
}
