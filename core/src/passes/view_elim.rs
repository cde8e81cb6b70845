//! View elimination: a chain of views collapses into one strided access on
//! the storage root (every view node already knows its layout over the
//! root), and views of inputs become inputs with that layout.

use crate::graph::dag::{GOp, Graph};
use crate::graph::op::{Op, ViewOp};

pub fn eliminate_views(g: &mut Graph) -> bool {
    let mut changed = false;
    for i in 0..g.nodes.len() {
        if !g.nodes[i].is_view() {
            continue;
        }
        let parent = g.nodes[i].inputs[0];
        let root = g.root_of(parent);
        if let GOp::Input(leaf) = g.nodes[root].op {
            let n = &mut g.nodes[i];
            n.op = GOp::Input(leaf);
            n.inputs.clear();
            changed = true;
        } else if parent != root || !matches!(g.view_op(i), Some(ViewOp::Composed(_))) {
            let layout = g.nodes[i].layout.clone();
            let n = &mut g.nodes[i];
            n.op = GOp::Op(Op::View(ViewOp::Composed(layout)));
            n.inputs = vec![root];
            changed = true;
        }
    }
    if changed {
        g.eliminate_dead();
    }
    changed
}
