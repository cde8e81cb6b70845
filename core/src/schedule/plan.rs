//! The buffer planner: every kernel output gets a slot; a slot whose last
//! reader has run is handed to a later kernel of the same dtype and a size
//! that fits, so a long chain reuses a few buffers instead of one per op.

use std::sync::Arc;

use crate::dtype::DType;
use crate::layout::Layout;
use crate::schedule::kernel::Kernel;

/// Where a kernel argument or a graph output lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BufRef {
    /// The i-th leaf buffer bound to the graph (user data, realized tensors).
    Leaf(usize),
    /// A buffer the plan allocates.
    Slot(usize),
}

/// One launch of the schedule.
#[derive(Debug, Clone)]
pub struct Step {
    pub kernel: Arc<Kernel>,
    pub args: Vec<BufRef>,
    pub out: usize,
}

/// One planned buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotInfo {
    pub dtype: DType,
    /// Elements (the largest use of this slot).
    pub len: usize,
    /// A graph output: handed to the caller, never reused.
    pub pinned: bool,
}

/// The buffers a schedule needs and what reuse saved.
#[derive(Debug, Clone, Default)]
pub struct BufferPlan {
    pub slots: Vec<SlotInfo>,
    /// Largest sum of live intermediate (non-output) bytes at any step.
    pub peak_intermediate_bytes: u64,
    /// What the intermediates would take with one buffer per kernel.
    pub unplanned_intermediate_bytes: u64,
}

/// A graph output: a buffer and the view of it the caller sees.
#[derive(Debug, Clone)]
pub struct OutputRef {
    pub buf: BufRef,
    pub layout: Layout,
}

/// Kernels in launch order, the buffers they use, and where outputs land.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub steps: Vec<Step>,
    pub plan: BufferPlan,
    pub outputs: Vec<OutputRef>,
}

/// A kernel before planning: its args name producer kernels or leaves.
#[derive(Debug, Clone)]
pub struct PendingStep {
    pub kernel: Arc<Kernel>,
    pub args: Vec<PendingRef>,
    /// True when the result is a graph output (directly or through a view).
    pub is_output: bool,
}

/// An argument before planning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingRef {
    Leaf(usize),
    /// The output of the i-th pending step.
    Step(usize),
}

/// Assigns slots to the outputs of `steps` (already in a valid order).
/// Returns the steps with concrete buffer refs and the plan.
pub fn plan_buffers(steps: &[PendingStep]) -> (Vec<Step>, BufferPlan) {
    let mut last_use = vec![usize::MAX; steps.len()];
    for (i, s) in steps.iter().enumerate() {
        for a in &s.args {
            if let PendingRef::Step(p) = a {
                last_use[*p] = i;
            }
        }
    }
    let mut plan = BufferPlan::default();
    let mut free: Vec<usize> = Vec::new();
    let mut slot_of = vec![0usize; steps.len()];
    let mut live_bytes: u64 = 0;
    let mut out_steps = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let (dtype, len) = (s.kernel.out_dtype, s.kernel.out_numel());
        let bytes = (len * dtype.size_in_bytes()) as u64;
        let slot = if s.is_output {
            plan.slots.push(SlotInfo {
                dtype,
                len,
                pinned: true,
            });
            plan.slots.len() - 1
        } else {
            plan.unplanned_intermediate_bytes += bytes;
            // Best fit among free slots of this dtype: the smallest that is
            // large enough, else the largest one grown to fit.
            let candidates = free
                .iter()
                .enumerate()
                .filter(|(_, &f)| plan.slots[f].dtype == dtype);
            let pick = candidates
                .clone()
                .filter(|(_, &f)| plan.slots[f].len >= len)
                .min_by_key(|(_, &f)| plan.slots[f].len)
                .or_else(|| candidates.max_by_key(|(_, &f)| plan.slots[f].len))
                .map(|(pos, _)| pos);
            match pick {
                Some(pos) => {
                    let f = free.swap_remove(pos);
                    let old = (plan.slots[f].len * dtype.size_in_bytes()) as u64;
                    plan.slots[f].len = plan.slots[f].len.max(len);
                    live_bytes += (plan.slots[f].len * dtype.size_in_bytes()) as u64 - old;
                    f
                }
                None => {
                    plan.slots.push(SlotInfo {
                        dtype,
                        len,
                        pinned: false,
                    });
                    live_bytes += bytes;
                    plan.slots.len() - 1
                }
            }
        };
        slot_of[i] = slot;
        let args = s
            .args
            .iter()
            .map(|a| match a {
                PendingRef::Leaf(l) => BufRef::Leaf(*l),
                PendingRef::Step(p) => BufRef::Slot(slot_of[*p]),
            })
            .collect();
        out_steps.push(Step {
            kernel: s.kernel.clone(),
            args,
            out: slot,
        });
        // Allocated-but-free slots still occupy memory: peak counts every
        // non-pinned slot ever allocated that is live or parked in `free`.
        plan.peak_intermediate_bytes = plan.peak_intermediate_bytes.max(live_bytes);
        // Release the inputs whose last reader was this step.
        let mut released: Vec<usize> = Vec::new();
        for a in &s.args {
            if let PendingRef::Step(p) = a {
                if last_use[*p] == i && !steps[*p].is_output && !released.contains(&slot_of[*p]) {
                    released.push(slot_of[*p]);
                }
            }
        }
        free.extend(released);
        if !s.is_output && last_use[i] == usize::MAX {
            free.push(slot);
        }
    }
    (out_steps, plan)
}
