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

/// The CUDA source of every kernel that computes `t` (fused as on the CPU).
fn cuda_sources(t: &crate::Tensor) -> Vec<String> {
    let c = crate::runtime::compiled_for(std::slice::from_ref(t), &crate::Limits::cpu()).unwrap();
    c.schedule
        .steps
        .iter()
        .map(|s| render(&s.kernel, &RenderOptions::cuda()).unwrap().source)
        .collect()
}

fn rows(r: usize, c: usize) -> crate::Tensor {
    let data: Vec<f32> = (0..r * c).map(|i| (i % 7) as f32).collect();
    crate::Tensor::from_vec(data, vec![r, c], &crate::Device::Cpu).unwrap()
}

#[test]
fn cuda_layer_norm_keeps_its_row_in_registers_for_all_three_passes() {
    let x = rows(8, 4096);
    let y = x.layer_norm(1, None, None, 1e-5).unwrap();
    let srcs = cuda_sources(&y);
    let row = srcs
        .iter()
        .find(|s| s.contains("fg_sh1"))
        .expect("a two-stage row kernel");
    // 4096 / 256 threads: 16 registers, filled by one load per element.
    assert!(row.contains("float fg_c0[16];"), "{row}");
    assert_eq!(row.matches("fg_a0[").count(), 1, "x is read once: {row}");
    assert!(!row.contains("if (r < 4096)"), "{row}");
}

#[test]
fn cuda_row_cache_guards_rows_that_threads_do_not_divide() {
    let y = rows(4, 1000).softmax(-1).unwrap();
    let srcs = cuda_sources(&y);
    let row = srcs
        .iter()
        .find(|s| s.contains("fg_c0["))
        .expect("a cached row kernel");
    // 1000 elements over 256 threads: 4 items, the last one past the end for some.
    assert!(
        row.contains("fg_c0[4];") && row.contains("if (r < 1000)"),
        "{row}"
    );
}

#[test]
fn rows_too_long_for_registers_read_memory_each_pass_in_both_dialects() {
    let y = rows(2, 8192).softmax(-1).unwrap();
    assert!(cuda_sources(&y).iter().all(|s| !s.contains("fg_c0[")));
    let c = crate::runtime::compiled_for(&[y], &crate::Limits::cpu()).unwrap();
    for s in &c.schedule.steps {
        let w = render(&s.kernel, &RenderOptions::wgsl()).unwrap().source;
        assert!(!w.contains("fg_c0"), "{w}");
    }
}

/// Every CUDA entry point (map, row reduction, short-row reduction, matmul)
/// waits for the kernel before it first: the backend launches them with
/// programmatic dependent launch, and a kernel without the wait could read
/// its input before the previous kernel has written it.
#[test]
fn every_cuda_entry_waits_for_the_previous_kernel_first() {
    let x = rows(64, 96);
    let cases = [
        x.relu().unwrap(),
        x.softmax(-1).unwrap(),
        rows(4096, 3).sum(&[1], false).unwrap(),
        x.matmul(&x.transpose(0, 1).unwrap()).unwrap(),
    ];
    for t in &cases {
        for src in cuda_sources(t) {
            let body = src
                .split_once("__global__")
                .and_then(|(_, rest)| rest.split_once('{'))
                .map(|(_, body)| body.trim_start())
                .expect("an entry point");
            assert!(
                body.starts_with(
                    "#if __CUDA_ARCH__ >= 900\n    asm volatile(\"griddepcontrol.wait;\""
                ),
                "{src}"
            );
        }
    }
}
