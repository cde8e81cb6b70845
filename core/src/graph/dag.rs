//! The mutable graph the passes rewrite: a vector of nodes in topological
//! order (every input index is smaller than its user's), graph outputs, and
//! the leaf buffers the graph reads.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::dtype::DType;
use crate::graph::op::{Op, ViewOp};
use crate::layout::Layout;
use crate::schedule::kernel::Kernel;

/// What a graph node is.
#[derive(Debug, Clone, PartialEq)]
pub enum GOp {
    /// Leaf buffer `i`, seen through the node's layout.
    Input(usize),
    /// An op not lowered yet.
    Op(Op),
    /// A lowered (possibly fused) kernel; its args are the node's inputs.
    Kernel(Arc<Kernel>),
    /// Removed by a pass; nothing refers to it any more.
    Dead,
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GNode {
    pub op: GOp,
    pub inputs: Vec<usize>,
    pub dtype: DType,
    /// For views and inputs: the view of the root storage. Otherwise
    /// contiguous over the node's shape.
    pub layout: Layout,
    /// Elements of the storage `layout` indexes.
    pub storage_len: usize,
}

impl GNode {
    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    pub fn is_view(&self) -> bool {
        matches!(self.op, GOp::Op(Op::View(_)))
    }

    pub fn kernel(&self) -> Option<&Arc<Kernel>> {
        match &self.op {
            GOp::Kernel(k) => Some(k),
            _ => None,
        }
    }
}

/// A leaf buffer the graph reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeafInfo {
    pub dtype: DType,
    pub len: usize,
}

/// The graph of one realization.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    pub nodes: Vec<GNode>,
    pub outputs: Vec<usize>,
    pub leaves: Vec<LeafInfo>,
}

impl Graph {
    /// How many live nodes use node `i` as an input (graph outputs count too).
    pub fn use_counts(&self) -> Vec<usize> {
        let mut uses = vec![0usize; self.nodes.len()];
        for n in &self.nodes {
            if n.op == GOp::Dead {
                continue;
            }
            for &i in &n.inputs {
                uses[i] += 1;
            }
        }
        for &o in &self.outputs {
            uses[o] += 1;
        }
        uses
    }

    /// The live nodes that use node `i`.
    pub fn users(&self, i: usize) -> Vec<usize> {
        (i + 1..self.nodes.len())
            .filter(|&u| self.nodes[u].op != GOp::Dead && self.nodes[u].inputs.contains(&i))
            .collect()
    }

    pub fn is_output(&self, i: usize) -> bool {
        self.outputs.contains(&i)
    }

    /// Points every use of `from` at `to` (`to` must come before all users).
    pub fn replace_uses(&mut self, from: usize, to: usize) {
        for n in &mut self.nodes {
            for i in &mut n.inputs {
                if *i == from {
                    *i = to;
                }
            }
        }
        for o in &mut self.outputs {
            if *o == from {
                *o = to;
            }
        }
    }

    /// Marks nodes no output depends on as dead. Returns true if any changed.
    pub fn eliminate_dead(&mut self) -> bool {
        let mut live = vec![false; self.nodes.len()];
        for &o in &self.outputs {
            live[o] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                for &j in &self.nodes[i].inputs {
                    live[j] = true;
                }
            }
        }
        let mut changed = false;
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if !live[i] && n.op != GOp::Dead {
                n.op = GOp::Dead;
                n.inputs.clear();
                changed = true;
            }
        }
        changed
    }

    /// The storage root of node `i`: itself unless it is a view.
    pub fn root_of(&self, mut i: usize) -> usize {
        while self.nodes[i].is_view() {
            i = self.nodes[i].inputs[0];
        }
        i
    }

    /// Number of live kernel nodes.
    pub fn kernel_count(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n.op, GOp::Kernel(_)))
            .count()
    }

    /// A structural hash: ops, shapes, dtypes, layouts and leaf types, but not
    /// data. Equal graphs reuse one compiled schedule.
    pub fn structural_hash(&self) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        self.nodes.len().hash(&mut h);
        for n in &self.nodes {
            match &n.op {
                GOp::Input(i) => (0u8, i).hash(&mut h),
                GOp::Op(op) => {
                    1u8.hash(&mut h);
                    op.hash(&mut h)
                }
                GOp::Kernel(_) => 2u8.hash(&mut h),
                GOp::Dead => 3u8.hash(&mut h),
            }
            n.inputs.hash(&mut h);
            n.dtype.hash(&mut h);
            n.layout.hash(&mut h);
            n.storage_len.hash(&mut h);
        }
        self.outputs.hash(&mut h);
        self.leaves.hash(&mut h);
        h.finish()
    }

    /// The view op of node `i`, if it is a view.
    pub fn view_op(&self, i: usize) -> Option<&ViewOp> {
        match &self.nodes[i].op {
            GOp::Op(Op::View(v)) => Some(v),
            _ => None,
        }
    }
}
