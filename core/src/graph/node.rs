//! Graph nodes as tensors hold them: immutable shape/dtype/layout, plus a
//! state that is either a pending op on input nodes or realized storage.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::backend::Storage;
use crate::dtype::DType;
use crate::graph::op::Op;
use crate::layout::Layout;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Where a node stands: not computed yet, or computed.
#[derive(Debug, Clone)]
pub enum State {
    Lazy {
        op: Op,
        inputs: Vec<Arc<Node>>,
    },
    /// The storage this node's `layout` indexes. Realizing a node drops its
    /// inputs, so a long chain of realized steps does not keep old buffers.
    Ready(Arc<Storage>),
}

/// One value of the graph.
#[derive(Debug)]
pub struct Node {
    pub id: u64,
    pub dtype: DType,
    /// The node's values as a view of its root's storage. For a node that is
    /// not a view this is contiguous over its shape.
    pub layout: Layout,
    /// Elements in the root storage the layout indexes.
    pub storage_len: usize,
    state: RwLock<State>,
}

impl Drop for Node {
    fn drop(&mut self) {
        // Inputs are released with an explicit stack: dropping the end of a
        // 100k-op lazy chain must not recurse 100k frames deep.
        let mut pending: Vec<Arc<Node>> = Vec::new();
        let mut state = self.take_state();
        loop {
            match state {
                State::Ready(storage) => {
                    // A dropped result's buffer goes back to the CPU pool
                    // when this node was its only owner.
                    if let Ok(Storage::Cpu(s)) = Arc::try_unwrap(storage) {
                        crate::backend::cpu::pool::give(s);
                    }
                }
                State::Lazy { inputs, .. } => pending.extend(inputs),
            }
            let next = loop {
                match pending.pop() {
                    None => return,
                    Some(n) => {
                        if let Ok(mut owned) = Arc::try_unwrap(n) {
                            break owned.take_state();
                        }
                    }
                }
            };
            state = next;
        }
    }
}

impl Node {
    pub fn new(dtype: DType, layout: Layout, storage_len: usize, state: State) -> Arc<Node> {
        Arc::new(Node {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            dtype,
            layout,
            storage_len,
            state: RwLock::new(state),
        })
    }

    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    /// A snapshot of the state (cheap: an op and some `Arc`s, or one `Arc`).
    pub fn state(&self) -> State {
        match self.state.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Consumes the node and returns its state.
    pub fn into_state(mut self) -> State {
        self.take_state()
    }

    fn take_state(&mut self) -> State {
        let slot = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(
            slot,
            State::Lazy {
                op: Op::Contiguous,
                inputs: Vec::new(),
            },
        )
    }

    /// Runs `f` on the state without cloning it.
    pub fn with_state<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        match self.state.read() {
            Ok(s) => f(&s),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }

    pub fn storage(&self) -> Option<Arc<Storage>> {
        // Under the read lock: cloning the whole state would copy a lazy
        // node's op and input list just to say it has no storage.
        self.with_state(|s| match s {
            State::Ready(s) => Some(s.clone()),
            State::Lazy { .. } => None,
        })
    }

    pub fn is_ready(&self) -> bool {
        self.with_state(|s| matches!(s, State::Ready(_)))
    }

    /// Records the computed storage and drops the inputs.
    pub fn set_ready(&self, storage: Arc<Storage>) {
        let mut guard = match self.state.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        *guard = State::Ready(storage);
    }
}
