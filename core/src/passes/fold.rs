//! Constant folding and algebraic identities on op nodes (before lowering).

use crate::dtype::Scalar;
use crate::graph::dag::{GOp, Graph};
use crate::graph::op::{BinaryOp, Op};

/// The constant value of node `i` if it is a `Full` or a view of one.
fn constant(g: &Graph, i: usize) -> Option<Scalar> {
    match &g.nodes[g.root_of(i)].op {
        GOp::Op(Op::Full(s)) => Some(*s),
        _ => None,
    }
}

/// Folds elementwise ops whose inputs are all constants into one constant,
/// turns views of constants into constants of the view's shape, and removes
/// `x * 1`, `x + 0`, `x - 0`, `x / 1` when `x` is a computed, non-view node.
pub fn fold_constants(g: &mut Graph) -> bool {
    let mut changed = false;
    for i in 0..g.nodes.len() {
        let GOp::Op(op) = &g.nodes[i].op else {
            continue;
        };
        let op = op.clone();
        let inputs = g.nodes[i].inputs.clone();
        let dtype = g.nodes[i].dtype;
        if let Op::View(_) = op {
            // A graph output keeps its view: the tensor's layout indexes the
            // root's storage, which must stay the constant's full buffer.
            // An index op reads a few elements of its source: a broadcast of
            // a small constant stays a view there, or folding would compute
            // the whole broadcast (2^32 - 1 elements for `expand([2**32-1])`).
            let root_numel = g.nodes[g.root_of(i)].layout.numel();
            let indexed = g.nodes[i].layout.numel() > root_numel
                && g.users(i).iter().any(|&u| {
                    matches!(
                        g.nodes[u].op,
                        GOp::Op(Op::IndexSelect { .. } | Op::Gather { .. })
                    )
                });
            // A view read by another view stays too: the later view's layout
            // indexes the root's buffer, not this view's (it folds itself,
            // unless it is an output).
            let viewed = g
                .users(i)
                .iter()
                .any(|&u| matches!(g.nodes[u].op, GOp::Op(Op::View(_))));
            if let Some(s) = constant(g, i).filter(|_| !g.is_output(i) && !indexed && !viewed) {
                // A view of a constant is a constant of the view's shape.
                let n = &mut g.nodes[i];
                n.op = GOp::Op(Op::Full(s));
                n.inputs.clear();
                n.layout = crate::layout::Layout::contiguous(&n.layout.shape.clone());
                n.storage_len = n.layout.numel();
                changed = true;
            }
            continue;
        }
        if !op.is_elementwise() {
            continue;
        }
        let consts: Option<Vec<Scalar>> = inputs.iter().map(|&x| constant(g, x)).collect();
        if let Some(c) = consts {
            let v = match &op {
                Op::Unary(u) => u.eval_f64(c[0].value),
                Op::Binary(b) if dtype.is_int() || c[0].dtype.is_int() => {
                    b.eval_int(c[0].value, c[1].value, c[0].dtype)
                }
                Op::Binary(b) => b.eval_f64(c[0].value, c[1].value),
                Op::Where => {
                    if c[0].value != 0.0 {
                        c[1].value
                    } else {
                        c[2].value
                    }
                }
                Op::Cast(_) => c[0].value,
                _ => continue,
            };
            let n = &mut g.nodes[i];
            n.op = GOp::Op(Op::Full(Scalar::new(v, dtype)));
            n.inputs.clear();
            changed = true;
            continue;
        }
        if let Op::Binary(b) = op {
            let (x, y) = (inputs[0], inputs[1]);
            let ident = |v: f64| constant(g, y).is_some_and(|s| s.value == v);
            let keep_x = match b {
                BinaryOp::Mul | BinaryOp::Div => ident(1.0),
                BinaryOp::Add | BinaryOp::Sub => ident(0.0),
                _ => false,
            };
            let xn = &g.nodes[x];
            let plain = !xn.is_view()
                && !matches!(xn.op, GOp::Input(_))
                && xn.dtype == dtype
                && xn.shape() == g.nodes[i].shape();
            if keep_x && plain && !g.is_output(i) {
                g.replace_uses(i, x);
                changed = true;
            }
        }
    }
    if changed {
        g.eliminate_dead();
    }
    changed
}
