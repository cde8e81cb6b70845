//! Matmul epilogue fusion: an elementwise tail that reads the product at
//! the same position (bias add, ReLU/GELU, residual add, a cast) becomes the
//! matmul kernel's epilogue, so the product is never written unfinished.

use crate::graph::dag::Graph;
use crate::layout::Layout;
use crate::passes::builder::{is_identity, set_kernel, Builder, LoadRewrite};
use crate::passes::Limits;
use crate::schedule::kernel::{Body, ExprNode, MatmulBody};

pub fn fuse_epilogue(g: &mut Graph, limits: &Limits) -> bool {
    let mut changed = false;
    for mmi in 0..g.nodes.len() {
        let Some(mk) = g.nodes[mmi].kernel().cloned() else {
            continue;
        };
        let Body::Matmul(mm) = &mk.body else { continue };
        if g.is_output(mmi) {
            continue;
        }
        let users = g.users(mmi);
        let [u] = users[..] else { continue };
        let Some(uk) = g.nodes[u].kernel().cloned() else {
            continue;
        };
        let Body::Map(um) = &uk.body else { continue };
        let out_shape = mm.out_shape();
        let u_args = g.nodes[u].inputs.clone();
        let reads_in_place = um.shape == out_shape
            && um.expr.nodes.iter().all(|n| match n {
                ExprNode::Load { arg, access } if u_args[*arg] == mmi => {
                    is_identity(access, &out_shape)
                }
                _ => true,
            });
        if !reads_in_place {
            continue;
        }
        let m_args = g.nodes[mmi].inputs.clone();
        let mut b = Builder {
            args: vec![m_args[0], m_args[1]],
            ..Default::default()
        };
        let mut keep = |node: usize, access: &Layout| LoadRewrite::Keep {
            node,
            access: access.clone(),
        };
        let Some(ep) = b.import(&mm.epilogue, &m_args, &[mm.out], 0, &mut keep) else {
            continue;
        };
        let mut rw = |node: usize, access: &Layout| {
            if node == mmi {
                LoadRewrite::With(ep[0])
            } else {
                LoadRewrite::Keep {
                    node,
                    access: access.clone(),
                }
            }
        };
        let Some(out) = b.import(&um.expr, &u_args, &[um.out], 0, &mut rw) else {
            continue;
        };
        if b.args.len() > limits.max_kernel_args {
            continue;
        }
        let body = Body::Matmul(MatmulBody {
            epilogue: b.expr.clone(),
            out: out[0],
            ..mm.clone()
        });
        set_kernel(g, u, body, b.args, uk.out_dtype, uk.out_shape.clone());
        g.eliminate_dead();
        changed = true;
    }
    changed
}
