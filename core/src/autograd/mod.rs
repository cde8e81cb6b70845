//! Reverse-mode automatic differentiation as a graph-to-graph transform.
//!
//! The graph is lazy, so a gradient is just more lazy tensors: [`grad`]
//! walks the forward nodes from the output back to the targets and records,
//! for every op, its vector-Jacobian product (VJP) as ordinary ops on the
//! forward nodes. Nothing runs until the gradients are read; realizing the
//! loss and its gradients together (`Tensor::realize_all`) computes the
//! shared forward work once, and the fusion passes treat the backward graph
//! like any other (a ReLU's mask fuses into the kernel that makes the
//! incoming gradient, a matmul's gradient takes an elementwise epilogue).
//!
//! ```
//! use fusegraph_core::{autograd, DType, Device, Tensor};
//! let dev = Device::Cpu;
//! // A realized tensor becomes a differentiable leaf with `requires_grad`.
//! let w = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], [3], &dev)?.requires_grad();
//! let loss = w.mul(&w)?.sum(&[], false)?; // sum(w²)
//! let [gw] = autograd::grad(&loss, &[&w])?.try_into().unwrap();
//! assert_eq!(gw.to_vec::<f32>()?, vec![2.0, -4.0, 6.0]);
//! # Ok::<(), fusegraph_core::Error>(())
//! ```
//!
//! Rules worth knowing:
//! * Gradients flow through lazy nodes only. A tensor that has been
//!   realized is a constant from then on (its inputs are dropped), like a
//!   `detach()`ed tensor; build the loss and take its gradient before
//!   reading values, then realize them together.
//! * Views of a realized tensor are realized at once and share its storage,
//!   so they would not connect to it in the graph: call
//!   [`Tensor::requires_grad`] on a realized parameter *before* taking views
//!   of it. [`grad`] reports the mistake as an error instead of returning a
//!   silent zero.
//! * Only float nodes carry gradients; integer and bool values (indices,
//!   masks, comparisons) are constants. A target the output does not depend
//!   on gets a zero gradient.

mod conv_grad;
mod sum_factors;
mod views;
mod vjp;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::graph::node::{Node, State};
use crate::graph::op::{Op, ViewOp};
use crate::tensor::Tensor;

impl Tensor {
    /// This tensor as a differentiable leaf of the graph.
    ///
    /// For a realized tensor this is a lazy identity view of it (no copy and
    /// no kernel: view elimination removes it), so that views and ops taken
    /// from the result stay connected in the graph and [`grad`] can reach
    /// it. A lazy tensor is already part of the graph and is returned as is.
    pub fn requires_grad(&self) -> Tensor {
        if !self.node.is_ready() {
            return self.clone();
        }
        Tensor {
            node: Node::new(
                self.dtype(),
                self.node.layout.clone(),
                self.node.storage_len,
                State::Lazy {
                    op: Op::View(ViewOp::Reshape(self.shape().to_vec())),
                    inputs: vec![self.node.clone()],
                },
            ),
            device: self.device,
        }
    }
}

/// Gradients of the scalar `output` with respect to each of `targets`, in
/// order (each with its target's shape and dtype). The results are lazy.
pub fn grad(output: &Tensor, targets: &[&Tensor]) -> Result<Vec<Tensor>> {
    if output.numel() != 1 {
        return Err(Error::InvalidArgument {
            op: "grad",
            what: "output",
            expected: "a single element (use autograd::vjp for other shapes)",
            got: format!("shape {:?}", output.shape()),
        });
    }
    let seed = Tensor::full(
        1.0,
        output.shape().to_vec(),
        output.dtype(),
        output.device(),
    )?;
    vjp(output, &seed, targets)
}

/// The vector-Jacobian product `cotangentᵀ · ∂output/∂target` for each target:
/// the gradient of `sum(output * cotangent)`. `cotangent` has `output`'s shape.
pub fn vjp(output: &Tensor, cotangent: &Tensor, targets: &[&Tensor]) -> Result<Vec<Tensor>> {
    if cotangent.shape() != output.shape() {
        return Err(Error::InvalidArgument {
            op: "vjp",
            what: "cotangent",
            expected: "the output's shape",
            got: format!("{:?} for output {:?}", cotangent.shape(), output.shape()),
        });
    }
    if !output.dtype().is_float() {
        return Err(Error::UnsupportedDType {
            op: "grad",
            dtype: output.dtype(),
            why: "only float outputs have gradients",
        });
    }
    for t in targets {
        Tensor::same_device("grad", output, t)?;
    }
    let target_ids: HashSet<u64> = targets.iter().map(|t| t.node.id).collect();
    let order = post_order(&output.node);
    check_realized_views(&order, targets, &target_ids)?;

    // A node needs a gradient when it is a target or feeds one.
    let mut needs: HashSet<u64> = HashSet::new();
    for n in &order {
        let feeds = match n.state() {
            State::Lazy { inputs, .. } => inputs.iter().any(|i| needs.contains(&i.id)),
            State::Ready(_) => false,
        };
        if n.dtype.is_float() && (feeds || target_ids.contains(&n.id)) {
            needs.insert(n.id);
        }
    }

    let device = *output.device();
    let mut cot: HashMap<u64, Tensor> = HashMap::new();
    cot.insert(output.node.id, cotangent.cast(output.dtype())?);
    for n in order.iter().rev() {
        if !needs.contains(&n.id) {
            continue;
        }
        let State::Lazy { op, inputs } = n.state() else {
            continue;
        };
        let Some(g) = cot.get(&n.id).cloned() else {
            continue;
        };
        let node = Tensor {
            node: n.clone(),
            device,
        };
        let ins: Vec<Tensor> = inputs
            .iter()
            .map(|i| Tensor {
                node: i.clone(),
                device,
            })
            .collect();
        let wanted: Vec<bool> = inputs.iter().map(|i| needs.contains(&i.id)).collect();
        let mut contributions: Vec<(Tensor, Tensor)> = Vec::new();
        match storage_reader_root(&op, &inputs[..]).filter(|r| needs.contains(&r.id)) {
            // `as_strided` reads its root's storage, possibly outside the
            // view it was called on: its gradient goes to that root.
            Some(root) => {
                let root = Tensor { node: root, device };
                let gr = views::as_strided(&node, &root, &g)?;
                contributions.push((root, gr));
            }
            None => {
                let grads = vjp::of_op(&op, &node, &ins, &g, &wanted)?;
                for ((input, wanted), gi) in ins.iter().zip(&wanted).zip(grads) {
                    if let (true, Some(gi)) = (*wanted, gi) {
                        contributions.push((input.clone(), gi));
                    }
                }
            }
        }
        for (input, gi) in contributions {
            let gi = gi.cast(input.dtype())?;
            let sum = match cot.remove(&input.node.id) {
                Some(prev) => prev.add(&gi)?,
                None => gi,
            };
            cot.insert(input.node.id, sum);
        }
        // Only targets keep their cotangent past this point.
        if !target_ids.contains(&n.id) {
            cot.remove(&n.id);
        }
    }
    targets
        .iter()
        .map(|t| match cot.get(&t.node.id) {
            Some(g) => Ok(g.clone()),
            None => t.zeros_like(),
        })
        .collect()
}

/// For a view that indexes its root's storage directly (`as_strided`, a
/// composed view), the deepest lazy node of its chain of views: the node
/// whose elements are the storage it reads (or, above a realized tensor,
/// the lazy view of that tensor that gradients are taken for).
fn storage_reader_root(op: &Op, inputs: &[Arc<Node>]) -> Option<Arc<Node>> {
    if !matches!(op, Op::View(ViewOp::AsStrided(_) | ViewOp::Composed(_))) {
        return None;
    }
    let mut n = inputs.first()?.clone();
    loop {
        let next = match n.state() {
            State::Lazy {
                op: Op::View(_),
                inputs,
            } => inputs.first().cloned(),
            _ => None,
        };
        match next {
            Some(i) if !i.is_ready() => n = i,
            _ => return Some(n),
        }
    }
}

/// Every node `root` depends on, inputs before the nodes that use them.
fn post_order(root: &Arc<Node>) -> Vec<Arc<Node>> {
    let mut seen: HashSet<u64> = HashSet::new();
    let mut out = Vec::new();
    let mut stack: Vec<(Arc<Node>, bool)> = vec![(root.clone(), false)];
    while let Some((n, expanded)) = stack.pop() {
        if expanded {
            out.push(n);
            continue;
        }
        if !seen.insert(n.id) {
            continue;
        }
        stack.push((n.clone(), true));
        if let State::Lazy { inputs, .. } = n.state() {
            for i in inputs.iter().rev() {
                if !seen.contains(&i.id) {
                    stack.push((i.clone(), false));
                }
            }
        }
    }
    out
}

/// A realized node that shares storage with a realized target is a view
/// taken before `requires_grad`: it would cut the gradient silently.
fn check_realized_views(
    order: &[Arc<Node>],
    targets: &[&Tensor],
    target_ids: &HashSet<u64>,
) -> Result<()> {
    let ready_targets: Vec<_> = targets.iter().filter_map(|t| t.node.storage()).collect();
    if ready_targets.is_empty() {
        return Ok(());
    }
    for n in order {
        if target_ids.contains(&n.id) {
            continue;
        }
        if let State::Ready(s) = n.state() {
            if ready_targets.iter().any(|t| Arc::ptr_eq(t, &s)) {
                return Err(Error::InvalidArgument {
                    op: "grad",
                    what: "target",
                    expected: "requires_grad() called before taking views of a realized tensor",
                    got: format!(
                        "a realized view of shape {:?} shares the target's storage",
                        n.shape()
                    ),
                });
            }
        }
    }
    Ok(())
}
