//! Turns the nodes reachable from some tensors into a [`Graph`]: lazy nodes
//! become graph nodes, realized nodes become leaves.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use crate::backend::cpu::CpuStorage;
use crate::graph::dag::{GNode, GOp, Graph, LeafInfo};
use crate::graph::node::{Node, State};

/// A graph plus what it was built from.
pub struct Built {
    pub graph: Graph,
    /// Storage bound to each leaf index.
    pub leaf_storage: Vec<Arc<CpuStorage>>,
    /// The tensor node behind each graph node (to record results).
    pub sources: Vec<Arc<Node>>,
}

/// Builds the graph that computes `outputs`. Iterative, so a chain of a
/// million ops does not overflow the stack.
pub fn build_graph(outputs: &[Arc<Node>]) -> Built {
    let mut graph = Graph::default();
    let mut leaf_storage: Vec<Arc<CpuStorage>> = Vec::new();
    let mut leaf_of: HashMap<*const CpuStorage, usize> = HashMap::default();
    let mut sources: Vec<Arc<Node>> = Vec::new();
    let mut index_of: HashMap<u64, usize> = HashMap::default();

    for out in outputs {
        // (node, inputs already pushed?)
        let mut stack: Vec<(Arc<Node>, bool)> = vec![(out.clone(), false)];
        while let Some((node, expanded)) = stack.pop() {
            if index_of.contains_key(&node.id) {
                continue;
            }
            let gnode = node.with_state(|state| match state {
                State::Ready(storage) => {
                    let key = Arc::as_ptr(storage);
                    let leaf = *leaf_of.entry(key).or_insert_with(|| {
                        leaf_storage.push(storage.clone());
                        graph.leaves.push(LeafInfo {
                            dtype: storage.dtype(),
                            len: storage.len(),
                        });
                        leaf_storage.len() - 1
                    });
                    Some(GNode {
                        op: GOp::Input(leaf),
                        inputs: vec![],
                        dtype: node.dtype,
                        layout: node.layout.clone(),
                        storage_len: storage.len(),
                    })
                }
                State::Lazy { op, inputs } if expanded => Some(GNode {
                    op: GOp::Op(op.clone()),
                    inputs: inputs.iter().map(|i| index_of[&i.id]).collect(),
                    dtype: node.dtype,
                    layout: node.layout.clone(),
                    storage_len: node.storage_len,
                }),
                State::Lazy { inputs, .. } => {
                    stack.push((node.clone(), true));
                    for i in inputs.iter().rev() {
                        if !index_of.contains_key(&i.id) {
                            stack.push((i.clone(), false));
                        }
                    }
                    None
                }
            });
            if let Some(g) = gnode {
                index_of.insert(node.id, graph.nodes.len());
                graph.nodes.push(g);
                sources.push(node);
            }
        }
        graph.outputs.push(index_of[&out.id]);
    }
    Built {
        graph,
        leaf_storage,
        sources,
    }
}
