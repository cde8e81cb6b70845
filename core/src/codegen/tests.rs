use super::render::{coalesce_map, fill, section};
use super::*;
use crate::layout::Layout;
use crate::schedule::{ArgInfo, Expr, ExprNode, MapBody};

fn relu_map(shape: &[usize], access: Layout) -> Kernel {
    let mut expr = Expr::default();
    let x = expr.push(ExprNode::Load { arg: 0, access }, DType::F32);
    let y = expr.push(
        ExprNode::Unary(crate::graph::op::UnaryOp::Relu, x),
        DType::F32,
    );
    Kernel {
        body: Body::Map(MapBody {
            shape: shape.to_vec(),
            expr,
            out: y,
        }),
        args: vec![ArgInfo {
            dtype: DType::F32,
            len: shape.iter().product(),
        }],
        out_dtype: DType::F32,
        out_shape: shape.to_vec(),
    }
}

#[test]
fn contiguous_map_coalesces_to_one_axis() {
    let k = relu_map(&[4, 1, 8, 3], Layout::contiguous(&[4, 1, 8, 3]));
    let Body::Map(m) = &k.body else {
        unreachable!()
    };
    assert_eq!(coalesce_map(m).shape, vec![96]);
}

#[test]
fn transposed_map_keeps_its_axes() {
    let l = Layout::contiguous(&[8, 4]).transpose(0, 1).unwrap();
    let k = relu_map(&[4, 8], l);
    let Body::Map(m) = &k.body else {
        unreachable!()
    };
    assert_eq!(coalesce_map(m).shape, vec![4, 8]);
}

#[test]
fn kernel_hash_is_structural() {
    let a = relu_map(&[4, 8], Layout::contiguous(&[4, 8]));
    let b = relu_map(&[4, 8], Layout::contiguous(&[4, 8]));
    let c = relu_map(&[8, 4], Layout::contiguous(&[8, 4]));
    assert_eq!(kernel_hash(&a), kernel_hash(&b));
    assert_ne!(kernel_hash(&a), kernel_hash(&c));
}

#[test]
fn unfilled_template_placeholder_is_an_error() {
    assert!(fill("a {{X}} b", &[]).is_err());
    assert_eq!(fill("a {{X}} b", &[("X", "1".into())]).unwrap(), "a 1 b");
}

#[test]
fn template_sections_split_at_markers() {
    let t = "head\n//@@ one\nA\n//@@ two\nB\n";
    assert_eq!(section(t, "one").unwrap(), "A\n");
    assert_eq!(section(t, "two").unwrap(), "B\n");
    assert!(section(t, "three").is_err());
}

#[test]
fn map_renders_for_both_dialects() {
    let k = relu_map(&[4, 8], Layout::contiguous(&[4, 8]));
    let w = render(&k, &RenderOptions::wgsl()).unwrap();
    assert!(w.source.contains("fn fg_map_"), "{}", w.source);
    let c = render(&k, &RenderOptions::cuda()).unwrap();
    assert!(c.source.contains("extern \"C\" __global__"), "{}", c.source);
}
