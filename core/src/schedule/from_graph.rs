//! Turns an optimized graph (every computing node a kernel) into a
//! [`Schedule`]: kernels in launch order with planned buffers.

use crate::error::{Error, Result};
use crate::graph::dag::{GOp, Graph};
use crate::layout::Layout;
use crate::schedule::plan::{plan_buffers, BufRef, OutputRef, PendingRef, PendingStep, Schedule};

pub fn schedule_graph(g: &Graph) -> Result<Schedule> {
    let mut step_of = vec![usize::MAX; g.nodes.len()];
    let mut pending = Vec::new();
    let output_roots: Vec<usize> = g.outputs.iter().map(|&o| g.root_of(o)).collect();
    for (i, n) in g.nodes.iter().enumerate() {
        let GOp::Kernel(k) = &n.op else { continue };
        let mut args = Vec::with_capacity(n.inputs.len());
        for &a in &n.inputs {
            args.push(match g.nodes[a].op {
                GOp::Input(leaf) => PendingRef::Leaf(leaf),
                GOp::Kernel(_) => PendingRef::Step(step_of[a]),
                _ => {
                    return Err(internal(format!(
                        "kernel %{i} reads %{a}, which is neither an input nor a kernel"
                    )))
                }
            });
        }
        step_of[i] = pending.len();
        pending.push(PendingStep {
            kernel: k.clone(),
            args,
            is_output: output_roots.contains(&i),
        });
    }
    let (steps, plan) = plan_buffers(&pending);
    let mut outputs = Vec::with_capacity(g.outputs.len());
    for (&o, &root) in g.outputs.iter().zip(&output_roots) {
        let layout = if g.nodes[o].is_view() || matches!(g.nodes[o].op, GOp::Input(_)) {
            g.nodes[o].layout.clone()
        } else {
            Layout::contiguous(g.nodes[o].shape())
        };
        let buf = match g.nodes[root].op {
            GOp::Input(leaf) => BufRef::Leaf(leaf),
            GOp::Kernel(_) => BufRef::Slot(steps[step_of[root]].out),
            _ => {
                return Err(internal(format!(
                    "output %{o} has root %{root}, which is not computed"
                )))
            }
        };
        outputs.push(OutputRef { buf, layout });
    }
    Ok(Schedule {
        steps,
        plan,
        outputs,
    })
}

fn internal(message: String) -> Error {
    Error::Backend {
        op: "schedule",
        message,
    }
}
