//! Every kernel shape the renderer emits must parse and validate with naga
//! (the WGSL front end wgpu uses), and the CUDA text must be deterministic.

use fusegraph_core::codegen::{kernel_hash, render, Dialect, RenderOptions, RenderedKernel};
use fusegraph_core::graph::op::{BinaryOp, ReduceOp, UnaryOp};
use fusegraph_core::schedule::{
    ArgInfo, Body, ConcatBody, Expr, ExprId, ExprNode, IndexBody, Kernel, MapBody, MatmulBody,
    ReduceBody, Stage,
};
use fusegraph_core::{DType, Error, Layout, Scalar};
use naga::valid::{Capabilities, ValidationFlags, Validator};

fn numbered(src: &str) -> String {
    src.lines()
        .enumerate()
        .map(|(i, l)| format!("{:4} {l}\n", i + 1))
        .collect()
}

/// Renders for WGSL and validates with naga; returns the rendered kernel.
fn validate(k: &Kernel, f16: bool) -> RenderedKernel {
    let opts = RenderOptions {
        shader_f16: f16,
        ..RenderOptions::wgsl()
    };
    let caps = if f16 {
        Capabilities::SHADER_FLOAT16
    } else {
        Capabilities::empty()
    };
    validate_with(k, &opts, caps)
}

/// Renders `k` with `opts` and validates it with naga under `caps`.
fn validate_with(k: &Kernel, opts: &RenderOptions, caps: Capabilities) -> RenderedKernel {
    let r = render(k, opts).unwrap_or_else(|e| panic!("render failed: {e}"));
    let module = naga::front::wgsl::parse_str(&r.source)
        .unwrap_or_else(|e| panic!("{}\n{}", e.emit_to_string(&r.source), numbered(&r.source)));
    Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}\n{}", e.emit_to_string(&r.source), numbered(&r.source)));
    let ep = module
        .entry_points
        .iter()
        .find(|e| e.name == r.entry)
        .unwrap_or_else(|| panic!("no entry point {}", r.entry));
    assert_eq!(ep.workgroup_size, r.workgroup_size);
    assert_eq!(r.bindings.len(), k.args.len() + 1);
    r
}

fn load(e: &mut Expr, arg: usize, access: Layout, dtype: DType) -> ExprId {
    e.push(ExprNode::Load { arg, access }, dtype)
}

fn konst(e: &mut Expr, v: f64, dtype: DType) -> ExprId {
    e.push(ExprNode::Const(Scalar::new(v, dtype)), dtype)
}

fn map(shape: &[usize], args: &[DType], expr: Expr, out: ExprId) -> Kernel {
    let n: usize = shape.iter().product();
    Kernel {
        out_dtype: expr.dtypes[out],
        body: Body::Map(MapBody {
            shape: shape.to_vec(),
            expr,
            out,
        }),
        args: args
            .iter()
            .map(|&dtype| ArgInfo { dtype, len: n })
            .collect(),
        out_shape: shape.to_vec(),
    }
}

/// `op(x)` over a 2-D map whose input is `dtype`.
fn unary_map(op: UnaryOp, dtype: DType, out: DType) -> Kernel {
    let mut e = Expr::default();
    let x = load(&mut e, 0, Layout::contiguous(&[5, 7]), dtype);
    let y = e.push(ExprNode::Unary(op, x), out);
    map(&[5, 7], &[dtype], e, y)
}

/// `op(a, b)` where `b` is broadcast along the rows.
fn binary_map(op: BinaryOp, dtype: DType) -> Kernel {
    let mut e = Expr::default();
    let a = load(&mut e, 0, Layout::contiguous(&[5, 7]), dtype);
    let b = load(
        &mut e,
        1,
        Layout {
            shape: vec![5, 7],
            strides: vec![0, 1],
            offset: 0,
        },
        dtype,
    );
    let out = if op.is_predicate() {
        DType::Bool
    } else {
        dtype
    };
    let y = e.push(ExprNode::Binary(op, a, b), out);
    map(&[5, 7], &[dtype, dtype], e, y)
}

const UNARY: [UnaryOp; 15] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Sqrt,
    UnaryOp::Rsqrt,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Relu,
    UnaryOp::GeluErf,
    UnaryOp::GeluTanh,
    UnaryOp::Silu,
    UnaryOp::Not,
];

const BINARY: [BinaryOp; 15] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Pow,
    BinaryOp::Maximum,
    BinaryOp::Minimum,
    BinaryOp::Eq,
    BinaryOp::Ne,
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::And,
    BinaryOp::Or,
];

const NON_F64: [DType; 6] = [
    DType::Bool,
    DType::U8,
    DType::I32,
    DType::F16,
    DType::BF16,
    DType::F32,
];

fn fused_three_input() -> Kernel {
    let shape = [4, 6, 8];
    let mut e = Expr::default();
    let a = load(&mut e, 0, Layout::contiguous(&shape), DType::F32);
    // A bias of shape [8] broadcast over the two outer axes.
    let b = load(
        &mut e,
        1,
        Layout {
            shape: shape.to_vec(),
            strides: vec![0, 0, 1],
            offset: 0,
        },
        DType::F32,
    );
    // A [8, 6, 4] tensor read through its transpose.
    let c = load(
        &mut e,
        2,
        Layout::contiguous(&[8, 6, 4]).permute(&[2, 1, 0]).unwrap(),
        DType::F32,
    );
    let s = e.push(ExprNode::Binary(BinaryOp::Add, a, b), DType::F32);
    let m = e.push(ExprNode::Binary(BinaryOp::Mul, s, c), DType::F32);
    let y = e.push(ExprNode::Unary(UnaryOp::Relu, m), DType::F32);
    let mut k = map(&shape, &[DType::F32, DType::F32, DType::F32], e, y);
    k.args[1].len = 8;
    k
}

#[test]
fn wgsl_fused_three_input_map_with_broadcast_and_transpose_validates() {
    let r = validate(&fused_three_input(), false);
    assert_eq!(r.dispatch, [1, 1, 1]);
    assert_eq!(r.bindings[1].words, 8);
    assert!(r.entry.starts_with("fg_map_"));
}

#[test]
fn wgsl_every_unary_op_on_f32_validates() {
    for op in UNARY {
        let (dt, out) = if op == UnaryOp::Not {
            (DType::Bool, DType::Bool)
        } else {
            (DType::F32, DType::F32)
        };
        validate(&unary_map(op, dt, out), false);
    }
}

#[test]
fn wgsl_integer_unary_ops_validate() {
    for dt in [DType::I32, DType::U8, DType::Bool] {
        for op in [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Relu, UnaryOp::Not] {
            let out = if op == UnaryOp::Not { DType::Bool } else { dt };
            validate(&unary_map(op, dt, out), false);
        }
        // Float-only ops on integer nodes compute in f32.
        validate(&unary_map(UnaryOp::Exp, dt, DType::F32), false);
    }
}

#[test]
fn wgsl_every_binary_op_on_every_dtype_validates() {
    for dt in [DType::F32, DType::I32, DType::U8, DType::Bool, DType::BF16] {
        for op in BINARY {
            validate(&binary_map(op, dt), false);
        }
    }
    for op in BINARY {
        validate(&binary_map(op, DType::F16), true);
    }
}

#[test]
fn wgsl_where_with_constants_including_infinities_validates() {
    let mut e = Expr::default();
    let x = load(&mut e, 0, Layout::contiguous(&[9]), DType::F32);
    let zero = konst(&mut e, 0.0, DType::F32);
    let c = e.push(ExprNode::Binary(BinaryOp::Gt, x, zero), DType::Bool);
    let inf = konst(&mut e, f64::INFINITY, DType::F32);
    let ninf = konst(&mut e, f64::NEG_INFINITY, DType::F32);
    let w = e.push(ExprNode::Where(c, inf, ninf), DType::F32);
    let nan = konst(&mut e, f64::NAN, DType::F32);
    let imin = konst(&mut e, i32::MIN as f64, DType::I32);
    let f = e.push(ExprNode::Cast(DType::F32, imin), DType::F32);
    let s = e.push(ExprNode::Binary(BinaryOp::Add, w, nan), DType::F32);
    let y = e.push(ExprNode::Binary(BinaryOp::Maximum, s, f), DType::F32);
    validate(&map(&[9], &[DType::F32], e, y), false);
}

#[test]
fn wgsl_casts_between_all_dtypes_validate() {
    for from in NON_F64 {
        for to in NON_F64 {
            let mut e = Expr::default();
            let x = load(&mut e, 0, Layout::contiguous(&[3, 11]), from);
            let y = e.push(ExprNode::Cast(to, x), to);
            validate(&map(&[3, 11], &[from], e, y), true);
        }
    }
}

#[test]
fn wgsl_packed_bf16_u8_bool_inputs_and_outputs_validate() {
    for out in [DType::BF16, DType::U8, DType::Bool, DType::F32] {
        let shape = [3, 5];
        let mut e = Expr::default();
        let h = load(&mut e, 0, Layout::contiguous(&shape), DType::BF16);
        let u = load(
            &mut e,
            1,
            Layout {
                shape: shape.to_vec(),
                strides: vec![1, 3],
                offset: 0,
            },
            DType::U8,
        );
        let b = load(&mut e, 2, Layout::contiguous(&shape), DType::Bool);
        let uf = e.push(ExprNode::Cast(DType::BF16, u), DType::BF16);
        let s = e.push(ExprNode::Binary(BinaryOp::Mul, h, uf), DType::BF16);
        let w = e.push(ExprNode::Where(b, s, h), DType::BF16);
        let y = e.push(ExprNode::Cast(out, w), out);
        let r = validate(
            &map(&shape, &[DType::BF16, DType::U8, DType::Bool], e, y),
            false,
        );
        assert!(r.bindings[0].packed && r.bindings[1].packed && r.bindings[2].packed);
        assert_eq!(r.bindings[0].words, 8, "15 bf16 values take 8 words");
        assert_eq!(r.bindings[1].words, 4, "15 bytes take 4 words");
        if out == DType::U8 {
            assert_eq!(r.dispatch, [1, 1, 1]);
            assert!(
                r.source.contains("var word"),
                "one invocation writes a whole word"
            );
        }
    }
}

#[test]
fn wgsl_f16_inputs_and_outputs_validate_with_shader_f16() {
    let mut e = Expr::default();
    let a = load(&mut e, 0, Layout::contiguous(&[4, 4]), DType::F16);
    let b = load(
        &mut e,
        1,
        Layout::contiguous(&[4, 4]).transpose(0, 1).unwrap(),
        DType::F16,
    );
    let y = e.push(ExprNode::Binary(BinaryOp::Add, a, b), DType::F16);
    let r = validate(&map(&[4, 4], &[DType::F16, DType::F16], e, y), true);
    assert!(r.source.starts_with("enable f16;"));
    assert!(!r.bindings[0].packed);
    assert_eq!(r.bindings[0].words, 8);
}

/// Softmax over `axis` of a rank-2 domain: max, then sum of exp(x - max), then exp(x - max) / sum everywhere.
fn softmax(shape: [usize; 2], axis: usize) -> Kernel {
    let mut e = Expr::default();
    let x = load(&mut e, 0, Layout::contiguous(&shape), DType::F32);
    let mx = e.push(ExprNode::StageRef(0), DType::F32);
    let d = e.push(ExprNode::Binary(BinaryOp::Sub, x, mx), DType::F32);
    let ex = e.push(ExprNode::Unary(UnaryOp::Exp, d), DType::F32);
    let sum = e.push(ExprNode::StageRef(1), DType::F32);
    let y = e.push(ExprNode::Binary(BinaryOp::Div, ex, sum), DType::F32);
    let n = shape[0] * shape[1];
    Kernel {
        body: Body::Reduce(ReduceBody {
            shape: shape.to_vec(),
            axes: vec![axis],
            expr: e,
            stages: vec![
                Stage {
                    op: ReduceOp::Max,
                    value: x,
                },
                Stage {
                    op: ReduceOp::Sum,
                    value: ex,
                },
            ],
            out: y,
            out_full: true,
        }),
        args: vec![ArgInfo {
            dtype: DType::F32,
            len: n,
        }],
        out_dtype: DType::F32,
        out_shape: shape.to_vec(),
    }
}

#[test]
fn wgsl_softmax_two_stage_rowwise_validates() {
    let r = validate(&softmax([6, 1000], 1), false);
    assert_eq!(r.dispatch, [6, 1, 1], "one workgroup per row");
    assert_eq!(r.workgroup_size, [256, 1, 1]);
    assert!(r.entry.starts_with("fg_rowwise_"));
}

/// Rows of at most 16 elements per invocation keep x in a private array
/// that all three passes read: loaded once, guarded when the workgroup does
/// not divide the row (1000 over 256), with and without subgroups.
#[test]
fn wgsl_softmax_keeps_its_row_in_a_private_array_and_validates() {
    for subgroups in [false, true] {
        let opts = RenderOptions {
            subgroups,
            ..RenderOptions::wgsl()
        };
        let caps = if subgroups {
            Capabilities::SUBGROUP
        } else {
            Capabilities::empty()
        };
        let r = validate_with(&softmax([6, 4096], 1), &opts, caps);
        assert!(
            r.source.contains("var fg_c0: array<f32, 16>;"),
            "{}",
            r.source
        );
        assert_eq!(
            r.source.matches("fg_a0[").count(),
            1,
            "x is read once: {}",
            r.source
        );
        assert!(!r.source.contains("if (r < 4096)"), "{}", r.source);
        let r = validate_with(&softmax([6, 1000], 1), &opts, caps);
        assert!(
            r.source.contains("var fg_c0: array<f32, 4>;") && r.source.contains("if (r < 1000) {"),
            "{}",
            r.source
        );
    }
    // 8192 elements are 32 per invocation: read from memory in every pass.
    let r = validate(&softmax([2, 8192], 1), false);
    assert!(!r.source.contains("fg_c0"), "{}", r.source);
}

#[test]
fn wgsl_softmax_two_stage_over_axis0_validates() {
    let r = validate(&softmax([5, 300], 0), false);
    assert_eq!(r.dispatch, [300, 1, 1]);
    assert_eq!(
        r.workgroup_size,
        [32, 1, 1],
        "short rows use a small workgroup"
    );
}

#[test]
fn wgsl_many_rows_dispatch_in_two_dimensions() {
    let r = validate(&softmax([70_000, 3], 1), false);
    assert_eq!(r.dispatch, [65_535, 2, 1]);
}

/// Variance over axes 1 and 2 of [4, 5, 300]: mean, then mean squared deviation; one value per row.
fn variance(out_dtype: DType) -> Kernel {
    let shape = vec![4, 5, 300];
    let n = 1500.0;
    let mut e = Expr::default();
    let x = load(&mut e, 0, Layout::contiguous(&shape), DType::F32);
    let inv = konst(&mut e, 1.0 / n, DType::F32);
    let xs = e.push(ExprNode::Binary(BinaryOp::Mul, x, inv), DType::F32);
    let mean = e.push(ExprNode::StageRef(0), DType::F32);
    let d = e.push(ExprNode::Binary(BinaryOp::Sub, x, mean), DType::F32);
    let d2 = e.push(ExprNode::Binary(BinaryOp::Mul, d, d), DType::F32);
    let ss = e.push(ExprNode::StageRef(1), DType::F32);
    let var = e.push(ExprNode::Binary(BinaryOp::Mul, ss, inv), DType::F32);
    let out = e.push(ExprNode::Cast(out_dtype, var), out_dtype);
    Kernel {
        body: Body::Reduce(ReduceBody {
            shape: shape.clone(),
            axes: vec![1, 2],
            expr: e,
            stages: vec![
                Stage {
                    op: ReduceOp::Sum,
                    value: xs,
                },
                Stage {
                    op: ReduceOp::Sum,
                    value: d2,
                },
            ],
            out,
            out_full: false,
        }),
        args: vec![ArgInfo {
            dtype: DType::F32,
            len: 6000,
        }],
        out_dtype,
        out_shape: vec![4, 1, 1],
    }
}

#[test]
fn wgsl_variance_two_stage_per_row_validates() {
    let r = validate(&variance(DType::F32), false);
    assert_eq!(r.dispatch, [4, 1, 1]);
    assert!(r.entry.starts_with("fg_reduce_"));
}

#[test]
fn wgsl_reduce_to_packed_bf16_output_merges_words_atomically_and_validates() {
    let r = validate(&variance(DType::BF16), false);
    assert!(r.source.contains("array<atomic<u32>>"));
    assert!(r.bindings[1].packed);
}

#[test]
fn wgsl_argmax_over_two_axes_validates() {
    for dt in [DType::F32, DType::I32, DType::U8, DType::BF16] {
        let shape = vec![3, 7, 5];
        let mut e = Expr::default();
        let x = load(&mut e, 0, Layout::contiguous(&shape), dt);
        let am = e.push(ExprNode::StageRef(0), DType::I32);
        let k = Kernel {
            body: Body::Reduce(ReduceBody {
                shape,
                axes: vec![1, 2],
                expr: e,
                stages: vec![Stage {
                    op: ReduceOp::ArgMax,
                    value: x,
                }],
                out: am,
                out_full: false,
            }),
            args: vec![ArgInfo {
                dtype: dt,
                len: 105,
            }],
            out_dtype: DType::I32,
            out_shape: vec![3, 1, 1],
        };
        let r = validate(&k, false);
        assert!(r.source.contains("fg_argbetter_"));
    }
}

#[test]
fn wgsl_min_max_sum_over_integer_and_bool_rows_validate() {
    for dt in [DType::I32, DType::U8, DType::Bool] {
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
            let shape = vec![6, 40];
            let mut e = Expr::default();
            let x = load(&mut e, 0, Layout::contiguous(&shape), dt);
            let s = e.push(ExprNode::StageRef(0), dt);
            let k = Kernel {
                body: Body::Reduce(ReduceBody {
                    shape,
                    axes: vec![1],
                    expr: e,
                    stages: vec![Stage { op, value: x }],
                    out: s,
                    out_full: false,
                }),
                args: vec![ArgInfo {
                    dtype: dt,
                    len: 240,
                }],
                out_dtype: dt,
                out_shape: vec![6, 1],
            };
            validate(&k, false);
        }
    }
}

/// `relu(A @ B^T + bias)` over batch [2, 3]: B is stored [batch, n, k] and read transposed.
fn matmul(dt: DType, acc: DType, out: DType) -> Kernel {
    let (m, n, k) = (70, 50, 33);
    let a = Layout::contiguous(&[2, 3, m, k]);
    let b = Layout::contiguous(&[2, 3, n, k]).transpose(2, 3).unwrap();
    let mut e = Expr::default();
    let s = e.push(ExprNode::Acc, acc);
    let bias = load(
        &mut e,
        2,
        Layout {
            shape: vec![2, 3, m, n],
            strides: vec![0, 0, 0, 1],
            offset: 0,
        },
        dt,
    );
    let bias = e.push(ExprNode::Cast(acc, bias), acc);
    let sum = e.push(ExprNode::Binary(BinaryOp::Add, s, bias), acc);
    let r = e.push(ExprNode::Unary(UnaryOp::Relu, sum), acc);
    let y = e.push(ExprNode::Cast(out, r), out);
    Kernel {
        body: Body::Matmul(MatmulBody {
            batch: vec![2, 3],
            m,
            n,
            k,
            a,
            b,
            acc_dtype: acc,
            epilogue: e,
            out: y,
        }),
        args: vec![
            ArgInfo {
                dtype: dt,
                len: 6 * m * k,
            },
            ArgInfo {
                dtype: dt,
                len: 6 * n * k,
            },
            ArgInfo { dtype: dt, len: n },
        ],
        out_dtype: out,
        out_shape: vec![2, 3, m, n],
    }
}

#[test]
fn wgsl_batched_matmul_transposed_b_bias_relu_validates() {
    let r = validate(&matmul(DType::F32, DType::F32, DType::F32), false);
    assert_eq!(r.workgroup_size, [16, 16, 1]);
    assert_eq!(r.dispatch, [1, 1, 6], "128x128 tiles, batches along z");
    assert!(r.entry.starts_with("fg_matmul_"));
}

#[test]
fn wgsl_matmul_bf16_i32_and_f16_variants_validate() {
    validate(&matmul(DType::BF16, DType::F32, DType::BF16), false);
    validate(&matmul(DType::I32, DType::I32, DType::I32), false);
    validate(&matmul(DType::U8, DType::I32, DType::U8), false);
    validate(&matmul(DType::F16, DType::F32, DType::F16), true);
}

fn concat3() -> Kernel {
    let parts = vec![
        Layout::contiguous(&[4, 2, 5]),
        Layout::contiguous(&[4, 3, 5]),
        Layout::contiguous(&[5, 4, 1]).permute(&[1, 2, 0]).unwrap(),
    ];
    Kernel {
        body: Body::Concat(ConcatBody {
            shape: vec![4, 6, 5],
            axis: 1,
            parts,
        }),
        args: vec![
            ArgInfo {
                dtype: DType::F32,
                len: 40,
            },
            ArgInfo {
                dtype: DType::F32,
                len: 60,
            },
            ArgInfo {
                dtype: DType::F32,
                len: 20,
            },
        ],
        out_dtype: DType::F32,
        out_shape: vec![4, 6, 5],
    }
}

#[test]
fn wgsl_concat_three_parts_validates() {
    let r = validate(&concat3(), false);
    assert!(r.entry.starts_with("fg_concat_"));
}

#[test]
fn wgsl_concat_of_packed_u8_parts_validates() {
    let mut k = concat3();
    k.args.iter_mut().for_each(|a| a.dtype = DType::U8);
    k.out_dtype = DType::U8;
    validate(&k, false);
}

fn index(gather: bool, idx_dtype: DType) -> Kernel {
    // Source [6, 9]; select/gather 4 entries along axis 1.
    let src = Layout::contiguous(&[6, 9]);
    let idx = if gather {
        Layout::contiguous(&[6, 4])
    } else {
        Layout::contiguous(&[4])
    };
    Kernel {
        body: Body::Index(IndexBody {
            shape: vec![6, 4],
            axis: 1,
            src,
            idx,
            gather,
        }),
        args: vec![
            ArgInfo {
                dtype: DType::F32,
                len: 54,
            },
            ArgInfo {
                dtype: idx_dtype,
                len: if gather { 24 } else { 4 },
            },
        ],
        out_dtype: DType::F32,
        out_shape: vec![6, 4],
    }
}

#[test]
fn wgsl_index_select_validates() {
    let r = validate(&index(false, DType::I32), false);
    assert!(r.entry.starts_with("fg_index_select_"));
    assert!(r.source.contains("clamp("), "out-of-range indices clamp");
    validate(&index(false, DType::U8), false);
}

#[test]
fn wgsl_gather_validates() {
    let r = validate(&index(true, DType::I32), false);
    assert!(r.entry.starts_with("fg_gather_"));
}

fn rand_map() -> Kernel {
    let mut e = Expr::default();
    let u = e.push(
        ExprNode::Rand {
            seed: 42,
            normal: false,
        },
        DType::F32,
    );
    let z = e.push(
        ExprNode::Rand {
            seed: 42,
            normal: true,
        },
        DType::F32,
    );
    let c = e.push(ExprNode::Coord(1), DType::I32);
    let cf = e.push(ExprNode::Cast(DType::F32, c), DType::F32);
    let s = e.push(ExprNode::Binary(BinaryOp::Add, u, z), DType::F32);
    let y = e.push(ExprNode::Binary(BinaryOp::Add, s, cf), DType::F32);
    map(&[16, 16], &[], e, y)
}

#[test]
fn wgsl_rand_map_validates_and_bakes_the_seed_key() {
    let r = validate(&rand_map(), false);
    let key = fusegraph_core::rng::seed_key(42);
    assert!(
        r.source.contains(&format!("{key}u")),
        "the per-tensor key is computed on the host"
    );
    assert!(r.source.contains("fn fg_pcg_hash"));
}

#[test]
fn wgsl_huge_map_dispatches_in_two_dimensions() {
    // Workgroups of 256 invocations computing 4 elements each: three rows
    // of 65535 workgroups.
    let n = 65_535 * 256 * 4 * 3;
    let k = unary_map(UnaryOp::Neg, DType::F32, DType::F32);
    let Body::Map(m) = &k.body else {
        unreachable!()
    };
    let mut m = m.clone();
    m.shape = vec![n];
    if let ExprNode::Load { access, .. } = &mut m.expr.nodes[0] {
        *access = Layout::contiguous(&[n]);
    }
    let k = Kernel {
        body: Body::Map(m),
        args: vec![ArgInfo {
            dtype: DType::F32,
            len: n,
        }],
        out_dtype: DType::F32,
        out_shape: vec![n],
    };
    let r = validate(&k, false);
    assert_eq!(r.dispatch, [65_535, 3, 1]);
}

#[test]
fn wgsl_f64_is_refused_naming_the_dtype() {
    let k = unary_map(UnaryOp::Exp, DType::F64, DType::F64);
    let err = render(&k, &RenderOptions::wgsl()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedDType {
                dtype: DType::F64,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("f64"), "{err}");
}

#[test]
fn wgsl_f16_without_shader_f16_is_refused() {
    let k = unary_map(UnaryOp::Exp, DType::F16, DType::F16);
    let err = render(&k, &RenderOptions::wgsl()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedDType {
                dtype: DType::F16,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("shader-f16"), "{err}");
}

#[test]
fn wgsl_more_storage_buffers_than_the_limit_is_refused() {
    let mut e = Expr::default();
    let mut acc = load(&mut e, 0, Layout::contiguous(&[4]), DType::F32);
    for i in 1..8 {
        let x = load(&mut e, i, Layout::contiguous(&[4]), DType::F32);
        acc = e.push(ExprNode::Binary(BinaryOp::Add, acc, x), DType::F32);
    }
    let k = map(&[4], &[DType::F32; 8], e, acc);
    let err = render(&k, &RenderOptions::wgsl()).unwrap_err();
    assert!(err.to_string().contains("storage buffers"), "{err}");
    let roomy = RenderOptions {
        max_storage_buffers: 9,
        ..RenderOptions::wgsl()
    };
    assert!(render(&k, &roomy).is_ok());
}

fn all_kernels() -> Vec<Kernel> {
    let mut ks = vec![
        fused_three_input(),
        softmax([6, 1000], 1),
        softmax([5, 300], 0),
        variance(DType::F32),
        variance(DType::BF16),
        matmul(DType::F32, DType::F32, DType::F32),
        matmul(DType::BF16, DType::F32, DType::BF16),
        matmul(DType::F16, DType::F32, DType::F16),
        matmul(DType::F64, DType::F64, DType::F64),
        matmul(DType::I32, DType::I32, DType::I32),
        concat3(),
        index(false, DType::I32),
        index(true, DType::U8),
        rand_map(),
    ];
    for op in UNARY {
        ks.push(if op == UnaryOp::Not {
            unary_map(op, DType::Bool, DType::Bool)
        } else {
            unary_map(op, DType::F64, DType::F64)
        });
    }
    for dt in DType::ALL {
        for op in BINARY {
            ks.push(binary_map(op, dt));
        }
    }
    ks
}

#[test]
fn wgsl_subgroup_reductions_validate() {
    let opts = RenderOptions {
        subgroups: true,
        ..RenderOptions::wgsl()
    };
    for k in [
        softmax([6, 1000], 1),
        softmax([5, 300], 0),
        variance(DType::F32),
        variance(DType::BF16),
    ] {
        let plain = render(&k, &RenderOptions::wgsl()).unwrap();
        assert!(!plain.source.contains("subgroup"), "{}", plain.source);
        let r = validate_with(&k, &opts, Capabilities::SUBGROUP);
        assert!(r.source.contains("subgroupAdd("), "{}", r.source);
        assert!(r.source.contains("@builtin(subgroup_id)"), "{}", r.source);
        assert!(
            !r.source.contains("fg_sh0[lid + s]"),
            "no tree left: {}",
            r.source
        );
    }
    // Softmax's max stage keeps NaN: the subgroup max is replaced by NaN
    // when any invocation holds one.
    let r = render(&softmax([6, 1000], 1), &opts).unwrap();
    assert!(
        r.source.contains("subgroupAny(fg_isnan_f32("),
        "{}",
        r.source
    );
}

#[test]
fn cuda_render_names_the_entry_and_is_deterministic() {
    for k in all_kernels() {
        let a = render(&k, &RenderOptions::cuda()).unwrap_or_else(|e| panic!("{e}"));
        let b = render(&k.clone(), &RenderOptions::cuda()).unwrap();
        assert_eq!(a, b, "rendering is deterministic");
        assert_eq!(kernel_hash(&k), kernel_hash(&k.clone()));
        assert_eq!(a.name, format!("fg_{}_{:016x}", k.kind(), kernel_hash(&k)));
        assert_eq!(a.entry, a.name);
        assert!(
            a.source.contains(&format!(
                "extern \"C\" __global__ void __launch_bounds__({}) {}(",
                a.workgroup_size[0] * a.workgroup_size[1],
                a.entry
            )),
            "{}",
            a.source
        );
        assert!(!a.source.contains("{{"), "template fully filled");
        let uses_half = a.source.contains("__half");
        assert_eq!(
            uses_half,
            a.source.contains("#include <cuda_fp16.h>"),
            "fp16 header only when used"
        );
        assert_eq!(
            a.source.contains("__nv_bfloat16"),
            a.source.contains("#include <cuda_bf16.h>"),
            "bf16 header only when used"
        );
    }
}

#[test]
fn cuda_f64_and_f16_kernels_use_native_types() {
    let r = render(
        &matmul(DType::F64, DType::F64, DType::F64),
        &RenderOptions::cuda(),
    )
    .unwrap();
    assert!(r.source.contains("const double* __restrict__ fg_a0"));
    assert!(r.source.contains("fma(x, y, acc)"));
    let r = render(
        &unary_map(UnaryOp::GeluErf, DType::F16, DType::F16),
        &RenderOptions::cuda(),
    )
    .unwrap();
    assert!(
        r.source.contains("__half2float") && r.source.contains("erff("),
        "{}",
        r.source
    );
    assert_eq!(r.bindings[0].words, 35, "CUDA sizes are in elements");
}

#[test]
fn wgsl_render_is_deterministic_and_names_by_hash() {
    for k in [
        fused_three_input(),
        softmax([6, 1000], 1),
        matmul(DType::F32, DType::F32, DType::F32),
    ] {
        let a = render(&k, &RenderOptions::wgsl()).unwrap();
        let b = render(&k, &RenderOptions::wgsl()).unwrap();
        assert_eq!(a, b);
        assert!(a.name.ends_with(&format!("{:016x}", kernel_hash(&k))));
        assert_eq!(RenderOptions::wgsl().dialect, Dialect::Wgsl);
    }
}
