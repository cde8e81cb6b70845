//! Splitting concatenations wider than a kernel may bind. A concat lowers
//! to one kernel that binds every part, so a concat of more parts than
//! [`Limits::max_kernel_args`] (seven on WebGPU's default limits) would
//! not compile. This pass turns such a node into a tree: consecutive runs
//! of parts are concatenated first, then the node concatenates the runs.
//! Each level copies its elements once more, so targets with a wide limit
//! (CUDA and the CPU bind 64) keep the optimiser's gradient concat, one
//! part per parameter, a single kernel for models of up to 64 parameters.

use crate::graph::dag::{GNode, GOp, Graph};
use crate::graph::op::Op;
use crate::layout::Layout;
use crate::passes::Limits;

/// Splits every concat with more inputs than the target binds; returns true
/// if it changed the graph.
pub fn split_wide_concats(g: &mut Graph, limits: &Limits) -> bool {
    // At least two parts per run, or the tree would not shrink.
    let width = limits.max_kernel_args.max(2);
    let mut changed = false;
    let mut i = 0;
    while i < g.nodes.len() {
        let wide =
            matches!(g.nodes[i].op, GOp::Op(Op::Concat { .. })) && g.nodes[i].inputs.len() > width;
        if wide {
            // The node at i moves up by the runs inserted before it and is
            // looked at again: its new inputs may still be too many.
            i += split(g, i, width);
            changed = true;
        } else {
            i += 1;
        }
    }
    changed
}

/// Inserts one concat per run of `width` inputs before node `i` and makes
/// node `i` concatenate the runs. Returns how many nodes were inserted.
fn split(g: &mut Graph, i: usize, width: usize) -> usize {
    let GOp::Op(Op::Concat { axis }) = g.nodes[i].op else {
        return 0;
    };
    let inputs = g.nodes[i].inputs.clone();
    let dtype = g.nodes[i].dtype;
    let runs: Vec<GNode> = inputs
        .chunks(width)
        .map(|run| {
            let mut shape = g.nodes[run[0]].shape().to_vec();
            shape[axis] = run.iter().map(|&p| g.nodes[p].shape()[axis]).sum();
            let len = shape.iter().product();
            GNode {
                op: GOp::Op(Op::Concat { axis }),
                inputs: run.to_vec(),
                dtype,
                layout: Layout::contiguous(&shape),
                storage_len: len,
            }
        })
        .collect();
    let added = runs.len();
    // Every index at or after `i` moves up by `added`; the runs read only
    // nodes before `i`, so their inputs stay as they are.
    let shift = |j: usize| if j >= i { j + added } else { j };
    for n in &mut g.nodes[i..] {
        n.inputs.iter_mut().for_each(|j| *j = shift(*j));
    }
    for o in &mut g.outputs {
        *o = shift(*o);
    }
    g.nodes[i].inputs = (i..i + added).collect();
    // Not `splice`: its drop guard is a code path of its own, which the
    // wasm builds would carry for this one call.
    let rest = g.nodes.split_off(i);
    g.nodes.extend(runs);
    g.nodes.extend(rest);
    added
}

#[cfg(test)]
mod tests {
    use crate::passes::Limits;
    use crate::runtime::{compiled_for, realize_with};
    use crate::{Device, Result, Tensor};

    /// A concat of 20 parts (one a transposed view) for a seven-argument
    /// target: every kernel stays within the limit, and the values, run
    /// on the CPU through that schedule, are the parts in order.
    #[test]
    fn wide_concat_becomes_a_tree_within_the_limit() -> Result<()> {
        let dev = Device::Cpu;
        let mut parts: Vec<Tensor> = (0..19)
            .map(|i| Tensor::from_vec(vec![i as f32; i % 3 + 1], [i % 3 + 1], &dev))
            .collect::<Result<_>>()?;
        let m = Tensor::from_vec(vec![100.0f32, 101.0, 102.0, 103.0], [2, 2], &dev)?;
        parts.push(m.t()?.flatten()?);
        let refs: Vec<&Tensor> = parts.iter().collect();
        let cat = Tensor::concat(&refs, 0)?;
        let limits = Limits::webgpu();
        let compiled = compiled_for(std::slice::from_ref(&cat), &limits)?;
        let args: Vec<usize> = compiled
            .schedule
            .steps
            .iter()
            .map(|s| s.args.len())
            .collect();
        assert!(args.len() > 1, "split into a tree: {args:?}");
        assert!(
            args.iter().all(|&a| a <= limits.max_kernel_args),
            "{args:?}"
        );
        realize_with(std::slice::from_ref(&cat), &limits)?;
        let mut want: Vec<f32> = (0..19).flat_map(|i| vec![i as f32; i % 3 + 1]).collect();
        want.extend([100.0, 102.0, 101.0, 103.0]);
        assert_eq!(cat.to_vec::<f32>()?, want);
        Ok(())
    }
}
