//! Turns the nodes reachable from some tensors into a [`Graph`]: lazy nodes
//! become graph nodes, realized nodes become leaves.
//!
//! Realizing a graph whose structure was seen before must cost microseconds,
//! so the walk is separate from graph construction: [`walk`] orders the
//! nodes and hashes their structure without copying any op or layout, a
//! cached graph is checked against the walk in place ([`Walked::matches`]),
//! and only a cache miss builds a [`Graph`].

use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::backend::Storage;
use crate::graph::dag::{GNode, GOp, Graph, LeafInfo};
use crate::graph::node::{Node, State};

/// A graph plus what it was built from.
pub struct Built {
    pub graph: Graph,
    /// Storage bound to each leaf index.
    pub leaf_storage: Vec<Arc<Storage>>,
    /// The tensor node behind each graph node (to record results).
    pub sources: Vec<Arc<Node>>,
}

/// The nodes reachable from some outputs, in topological order.
pub struct Walked {
    /// Tensor nodes in graph order.
    pub nodes: Vec<Arc<Node>>,
    /// Graph index of each node's inputs (empty for leaves).
    pub inputs: Vec<Vec<usize>>,
    /// Leaf index of each realized node.
    pub leaf: Vec<Option<usize>>,
    pub leaf_storage: Vec<Arc<Storage>>,
    pub leaves: Vec<LeafInfo>,
    pub outputs: Vec<usize>,
    /// Hash of ops, dtypes, layouts, edges and leaf types (no data).
    pub hash: u64,
}

/// Walks the DAG behind `outputs`. Iterative, so a chain of a million ops
/// does not overflow the stack.
pub fn walk(outputs: &[Arc<Node>]) -> Walked {
    // Sized for typical graphs so the walk does not regrow its vectors.
    const TYPICAL: usize = 8;
    let mut w = Walked {
        nodes: Vec::with_capacity(TYPICAL),
        inputs: Vec::with_capacity(TYPICAL),
        leaf: Vec::with_capacity(TYPICAL),
        leaf_storage: Vec::new(),
        leaves: Vec::new(),
        outputs: Vec::with_capacity(outputs.len()),
        hash: 0,
    };
    let mut leaf_of: HashMap<*const Storage, usize> = HashMap::default();
    let mut index_of: HashMap<u64, usize> =
        HashMap::with_capacity_and_hasher(TYPICAL, Default::default());
    let mut h = rustc_hash::FxHasher::default();
    for out in outputs {
        // (node, inputs already pushed?)
        let mut stack: Vec<(Arc<Node>, bool)> = Vec::with_capacity(TYPICAL);
        stack.push((out.clone(), false));
        while let Some((node, expanded)) = stack.pop() {
            if index_of.contains_key(&node.id) {
                continue;
            }
            let entry = node.with_state(|state| match state {
                State::Ready(storage) => {
                    let key = Arc::as_ptr(storage);
                    let leaf = *leaf_of.entry(key).or_insert_with(|| {
                        w.leaf_storage.push(storage.clone());
                        w.leaves.push(LeafInfo {
                            dtype: storage.dtype(),
                            len: storage.len(),
                        });
                        w.leaf_storage.len() - 1
                    });
                    (0u8, leaf).hash(&mut h);
                    Some((Some(leaf), Vec::new()))
                }
                State::Lazy { op, inputs } if expanded => {
                    let ids: Vec<usize> = inputs.iter().map(|i| index_of[&i.id]).collect();
                    1u8.hash(&mut h);
                    op.hash(&mut h);
                    ids.hash(&mut h);
                    Some((None, ids))
                }
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
            if let Some((leaf, ids)) = entry {
                node.dtype.hash(&mut h);
                node.layout.hash(&mut h);
                node.storage_len.hash(&mut h);
                index_of.insert(node.id, w.nodes.len());
                w.nodes.push(node);
                w.inputs.push(ids);
                w.leaf.push(leaf);
            }
        }
        w.outputs.push(index_of[&out.id]);
    }
    w.outputs.hash(&mut h);
    w.leaves.hash(&mut h);
    w.hash = h.finish();
    w
}

/// Slice equality as an inline loop: these slices hold a few elements, and
/// `==` on them calls `memcmp`, which cost 40% of a cached realize's graph
/// walk and lookup (profiled on 1000 one-op realizes).
#[inline]
fn same<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl Walked {
    /// True when `g` (a graph built from an earlier walk) has exactly this
    /// structure, so its compiled schedule applies to these nodes.
    pub fn matches(&self, g: &Graph) -> bool {
        if g.nodes.len() != self.nodes.len()
            || !same(&g.outputs, &self.outputs)
            || g.leaves != self.leaves
        {
            return false;
        }
        g.nodes
            .iter()
            .zip(&self.nodes)
            .zip(self.inputs.iter().zip(&self.leaf))
            .all(|((gn, n), (ids, leaf))| {
                gn.dtype == n.dtype
                    && gn.layout.offset == n.layout.offset
                    && same(&gn.layout.shape, &n.layout.shape)
                    && same(&gn.layout.strides, &n.layout.strides)
                    && gn.storage_len == n.storage_len
                    && same(&gn.inputs, ids)
                    && match (&gn.op, leaf) {
                        (GOp::Input(l), Some(leaf)) => l == leaf,
                        (GOp::Op(op), None) => {
                            n.with_state(|s| matches!(s, State::Lazy { op: o, .. } if o == op))
                        }
                        _ => false,
                    }
            })
    }

    /// The graph of this walk (copies ops and layouts).
    pub fn to_graph(&self) -> Graph {
        let nodes = self
            .nodes
            .iter()
            .zip(self.inputs.iter().zip(&self.leaf))
            .map(|(n, (ids, leaf))| {
                let op = match leaf {
                    Some(l) => GOp::Input(*l),
                    None => n.with_state(|s| match s {
                        State::Lazy { op, .. } => GOp::Op(op.clone()),
                        // Realized while we looked: its old op is gone, but the
                        // walk already recorded it as lazy, so keep it dead.
                        State::Ready(_) => GOp::Dead,
                    }),
                };
                GNode {
                    op,
                    inputs: ids.clone(),
                    dtype: n.dtype,
                    layout: n.layout.clone(),
                    storage_len: n.storage_len,
                }
            })
            .collect();
        Graph {
            nodes,
            outputs: self.outputs.clone(),
            leaves: self.leaves.clone(),
        }
    }
}

/// Builds the graph that computes `outputs`.
pub fn build_graph(outputs: &[Arc<Node>]) -> Built {
    let w = walk(outputs);
    let graph = w.to_graph();
    Built {
        graph,
        leaf_storage: w.leaf_storage,
        sources: w.nodes,
    }
}
