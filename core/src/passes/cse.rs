//! Common-subexpression elimination: nodes with the same op, inputs, dtype
//! and layout compute the same values, so later copies use the first.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::graph::dag::{GOp, Graph};

pub fn eliminate_common_subexpressions(g: &mut Graph) -> bool {
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut changed = false;
    for i in 0..g.nodes.len() {
        let n = &g.nodes[i];
        let GOp::Op(op) = &n.op else { continue };
        let mut h = rustc_hash::FxHasher::default();
        op.hash(&mut h);
        n.inputs.hash(&mut h);
        n.dtype.hash(&mut h);
        n.layout.hash(&mut h);
        let key = h.finish();
        let bucket = seen.entry(key).or_default();
        let same = bucket.iter().copied().find(|&j| {
            let m = &g.nodes[j];
            m.op == n.op
                && m.inputs == n.inputs
                && m.dtype == n.dtype
                && m.layout == n.layout
                && m.storage_len == n.storage_len
        });
        match same {
            Some(j) => {
                g.replace_uses(i, j);
                changed = true;
            }
            None => bucket.push(i),
        }
    }
    if changed {
        g.eliminate_dead();
    }
    changed
}
