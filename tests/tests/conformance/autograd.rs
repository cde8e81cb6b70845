// Gradients of every foundation op: the VJP math against central finite
// differences in f64 (reference path), and the backward graph's execution
// on this backend against the reference path, per dtype.
//
// Backend tolerances: `Tol::of(dtype).ops(n)` with `n` the rounding ops on
// the longest path of the backward graph (forward ops it reuses included),
// `.reduce(k)` where the gradient sums `k` terms.

use fusegraph_core::autograd;
use fusegraph_tests::gradcheck::{check_backend, check_fd, Input};

/// Runs the finite-difference check, then the backend check in each of
/// `dtypes` the device computes.
fn both(
    what: &str,
    inputs: &[Input],
    dtypes: &[DType],
    ops: usize,
    reduce: usize,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<()> {
    let d = match device() {
        Some(d) => d,
        None => return Ok(()),
    };
    check_fd(what, inputs, f)?;
    for dtype in supported(&d, dtypes) {
        check_backend(
            what,
            inputs,
            dtype,
            &d,
            Tol::of(dtype).ops(ops).reduce(reduce),
            f,
        )?;
    }
    Ok(())
}

const F64_F32: [DType; 2] = [DType::F64, DType::F32];

#[test]
fn unary_ops() -> Result<()> {
    type U = fn(&Tensor) -> Result<Tensor>;
    let cases: [(&str, U, f64, f64); 14] = [
        ("neg", Tensor::neg, -2.0, 2.0),
        ("abs", Tensor::abs, -2.0, 2.0),
        ("exp", Tensor::exp, -2.0, 2.0),
        ("log", Tensor::log, 0.5, 3.0),
        ("sqrt", Tensor::sqrt, 0.5, 3.0),
        ("rsqrt", Tensor::rsqrt, 0.5, 3.0),
        ("sin", Tensor::sin, -3.0, 3.0),
        ("cos", Tensor::cos, -3.0, 3.0),
        ("tanh", Tensor::tanh, -2.0, 2.0),
        ("sigmoid", Tensor::sigmoid, -3.0, 3.0),
        ("relu", Tensor::relu, -2.0, 2.0),
        ("gelu", Tensor::gelu, -3.0, 3.0),
        ("gelu_tanh", Tensor::gelu_tanh, -3.0, 3.0),
        ("silu", Tensor::silu, -3.0, 3.0),
    ];
    for (i, (name, op, lo, hi)) in cases.into_iter().enumerate() {
        // A transposed (non-contiguous) input; values kept away from kinks.
        let x = Input::uniform(&[3, 4], 100 + i as u64, lo, hi).transposed();
        let mut x = x;
        for v in &mut x.values {
            if v.abs() < 0.05 {
                *v += 0.1;
            }
        }
        both(name, &[x.clone()], &F64_F32, 12, 1, &|t| op(&t[0]))?;
        both(
            name,
            &[x],
            &[DType::F16, DType::BF16],
            12,
            1,
            &|t| op(&t[0]),
        )?;
    }
    Ok(())
}

#[test]
fn binary_ops_with_broadcasting() -> Result<()> {
    type B = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let cases: [(&str, B, f64, f64); 7] = [
        ("add", Tensor::add, -2.0, 2.0),
        ("sub", Tensor::sub, -2.0, 2.0),
        ("mul", Tensor::mul, -2.0, 2.0),
        ("div", Tensor::div, 0.5, 2.0),
        ("pow", Tensor::pow, 0.5, 2.0),
        ("maximum", Tensor::maximum, -2.0, 2.0),
        ("minimum", Tensor::minimum, -2.0, 2.0),
    ];
    for (i, (name, op, lo, hi)) in cases.into_iter().enumerate() {
        // [3, 1, 4] with [2, 4]: both operands broadcast.
        let a = Input::uniform(&[3, 1, 4], 200 + i as u64, lo, hi);
        let b = Input::uniform(&[2, 4], 300 + i as u64, lo, hi).transposed();
        both(name, &[a, b], &F64_F32, 8, 6, &|t| op(&t[0], &t[1]))?;
    }
    Ok(())
}

#[test]
fn ties_split_the_gradient_of_maximum_and_max() -> Result<()> {
    let d = dev!();
    let a = leaf(&[1.0, 2.0, 3.0], &[3], DType::F32, &d)?.requires_grad();
    let b = leaf(&[1.0, 5.0, 0.0], &[3], DType::F32, &d)?.requires_grad();
    let g = autograd::grad(&a.maximum(&b)?.sum(&[], false)?, &[&a, &b])?;
    assert_eq!(g[0].to_vec::<f32>()?, vec![0.5, 0.0, 1.0]);
    assert_eq!(g[1].to_vec::<f32>()?, vec![0.5, 1.0, 0.0]);
    let x = leaf(&[4.0, 1.0, 4.0, 2.0], &[4], DType::F32, &d)?.requires_grad();
    let g = autograd::grad(&x.max(&[], false)?, &[&x])?;
    assert_eq!(g[0].to_vec::<f32>()?, vec![0.5, 0.0, 0.5, 0.0]);
    Ok(())
}

#[test]
fn where_and_clamp() -> Result<()> {
    let c = Input::uniform(&[4, 1], 400, -1.0, 1.0);
    let a = Input::uniform(&[4, 3], 401, -2.0, 2.0);
    let b = Input::uniform(&[3], 402, -2.0, 2.0);
    both("where", &[c, a, b], &F64_F32, 4, 4, &|t| {
        Tensor::where_cond(&t[0].gt_scalar(0.0)?, &t[1].mul(&t[1])?, &t[2])
    })?;
    let x = Input::uniform(&[5, 3], 403, -2.0, 2.0);
    both("clamp", &[x], &F64_F32, 4, 1, &|t| {
        t[0].clamp(-0.7, 0.9)?.mul_scalar(3.0)
    })
}

#[test]
fn reductions() -> Result<()> {
    let x = || Input::uniform(&[4, 5, 6], 500, -2.0, 2.0);
    both("sum axis 1", &[x()], &F64_F32, 3, 1, &|t| {
        t[0].sum(&[1], false)
    })?;
    both("sum all", &[x()], &F64_F32, 3, 1, &|t| t[0].sum(&[], true))?;
    both("mean 0,2", &[x()], &F64_F32, 3, 1, &|t| {
        t[0].mean(&[0, 2], false)
    })?;
    both("max -1", &[x()], &F64_F32, 5, 6, &|t| {
        t[0].max(&[-1], false)
    })?;
    both("min 0", &[x()], &F64_F32, 5, 4, &|t| t[0].min(&[0], true))?;
    both("var 1", &[x()], &F64_F32, 8, 5, &|t| {
        t[0].var(&[1], 1, false)
    })?;
    let xt = Input::uniform(&[6, 7], 501, -2.0, 2.0).transposed();
    both("sum of transposed", &[xt], &F64_F32, 3, 1, &|t| {
        t[0].exp()?.sum(&[0], false)
    })
}

#[test]
fn views() -> Result<()> {
    let x = || Input::uniform(&[3, 4, 5], 600, -2.0, 2.0);
    both("permute", &[x()], &F64_F32, 3, 1, &|t| {
        t[0].permute(&[2, 0, 1])?.mul_scalar(2.0)
    })?;
    both("narrow", &[x()], &F64_F32, 3, 1, &|t| {
        t[0].narrow(1, 1, 2)?.exp()
    })?;
    both(
        "expand",
        &[Input::uniform(&[3, 1, 5], 601, -1.0, 1.0)],
        &F64_F32,
        3,
        4,
        &|t| t[0].expand([2, 3, 4, 5])?.tanh(),
    )?;
    both(
        "reshape of transposed",
        &[Input::uniform(&[4, 6], 602, -1.0, 1.0).transposed()],
        &F64_F32,
        3,
        1,
        &|t| t[0].reshape([3, 8])?.sin(),
    )?;
    both(
        "squeeze/unsqueeze",
        &[Input::uniform(&[3, 1, 4], 603, -1.0, 1.0)],
        &F64_F32,
        3,
        1,
        &|t| t[0].squeeze(1)?.unsqueeze(0)?.mul(&t[0].squeeze(1)?),
    )?;
    // Overlapping windows (as conv2d's im2col builds them): each element
    // is read by up to three windows.
    both(
        "as_strided windows",
        &[Input::uniform(&[10], 604, -1.0, 1.0)],
        &F64_F32,
        4,
        3,
        &|t| {
            t[0].as_strided(&[4, 3], &[2, 1], 1)?
                .mul(&t[0].as_strided(&[4, 3], &[2, 1], 1)?)
        },
    )?;
    both(
        "as_strided of a narrowed view",
        &[Input::uniform(&[4, 6], 605, -1.0, 1.0)],
        &F64_F32,
        4,
        2,
        &|t| t[0].narrow(1, 1, 4)?.as_strided(&[3, 3], &[6, 2], 1)?.exp(),
    )?;
    both(
        "contiguous",
        &[Input::uniform(&[4, 6], 606, -1.0, 1.0).transposed()],
        &F64_F32,
        3,
        1,
        &|t| t[0].contiguous()?.mul(&t[0]),
    )
}

#[test]
fn conv2d_and_pooling_window_gradients() -> Result<()> {
    use fusegraph_core::nn::{Conv2dOptions, DataLayout};
    // The window view's gradient (col2im): for conv2d a backward-data
    // convolution of the spread output gradient; for pooling the spread,
    // padded gradient summed over windows that step backwards.
    let x = Input::uniform(&[2, 7, 6, 3], 620, -1.0, 1.0);
    let w = Input::uniform(&[2, 3, 3, 2], 621, -1.0, 1.0);
    let nhwc = |o: Conv2dOptions| o.layout(DataLayout::Nhwc);
    for opts in [
        nhwc(Conv2dOptions::default().padding(1)),
        nhwc(Conv2dOptions {
            stride: (2, 1),
            padding: (1, 2),
            dilation: (1, 2),
            layout: DataLayout::Nhwc,
        }),
    ] {
        both(
            &format!("conv2d {opts:?}"),
            &[x.clone(), w.clone()],
            &F64_F32,
            6,
            18,
            &move |t| t[0].conv2d(&t[1], None, opts),
        )?;
    }
    both(
        "max_pool2d 3x3 stride 2 padding 1",
        std::slice::from_ref(&x),
        &F64_F32,
        3,
        9,
        &|t| t[0].max_pool2d((3, 3), nhwc(Conv2dOptions::default().stride(2).padding(1))),
    )?;
    Ok(())
}

#[test]
fn conv2d_of_resnet_shapes_in_every_float_dtype() -> Result<()> {
    use fusegraph_core::nn::{Conv2dOptions, DataLayout};
    // A CIFAR ResNet's convolutions (3x3 stride 1 and 2, the 1x1 stride-2
    // shortcut) forward and backward in f32, f16 and bf16: on CUDA these
    // are cuDNN's three passes, elsewhere im2col + matmul. The window
    // geometry's finite differences are checked above.
    let Some(d) = device() else { return Ok(()) };
    let x = Input::uniform(&[2, 6, 6, 16], 630, -1.0, 1.0);
    for (k, stride, pad, seed) in [(3, 1, 1, 631), (3, 2, 1, 632), (1, 2, 0, 633)] {
        let w = Input::uniform(&[24, 16, k, k], seed, -0.5, 0.5);
        let opts = Conv2dOptions::default()
            .stride(stride)
            .padding(pad)
            .layout(DataLayout::Nhwc);
        for dtype in supported(&d, &[DType::F32, DType::F16, DType::BF16]) {
            check_backend(
                &format!("conv2d {k}x{k} stride {stride}"),
                &[x.clone(), w.clone()],
                dtype,
                &d,
                // dx sums o·k·k = 216 terms, the deepest of the three passes.
                Tol::of(dtype).ops(3).reduce(24 * k * k),
                &move |t| t[0].conv2d(&t[1], None, opts),
            )?;
        }
    }
    Ok(())
}

#[test]
fn matmul_plain_batched_transposed_and_vectors() -> Result<()> {
    let a = Input::uniform(&[5, 7], 700, -1.0, 1.0);
    let b = Input::uniform(&[7, 3], 701, -1.0, 1.0).transposed();
    both("matmul", &[a, b], &F64_F32, 4, 7, &|t| t[0].matmul(&t[1]))?;
    let a = Input::uniform(&[2, 1, 4, 6], 702, -1.0, 1.0);
    let b = Input::uniform(&[3, 6, 5], 703, -1.0, 1.0);
    both("batched broadcast matmul", &[a, b], &F64_F32, 4, 12, &|t| {
        t[0].matmul(&t[1])
    })?;
    let v = Input::uniform(&[6], 704, -1.0, 1.0);
    let m = Input::uniform(&[6, 4], 705, -1.0, 1.0);
    both("vector @ matrix", &[v, m], &F64_F32, 4, 6, &|t| {
        t[0].matmul(&t[1])
    })?;
    let a = Input::uniform(&[8, 16], 706, -1.0, 1.0);
    let w = Input::uniform(&[16, 4], 707, -1.0, 1.0);
    let bias = Input::uniform(&[4], 708, -1.0, 1.0);
    both("relu(a @ w + b)", &[a, w, bias], &F64_F32, 6, 16, &|t| {
        t[0].matmul(&t[1])?.add(&t[2])?.relu()
    })
}

#[test]
fn softmax_log_softmax_layer_norm() -> Result<()> {
    let x = || Input::uniform(&[4, 9], 800, -2.0, 2.0);
    both("softmax", &[x()], &F64_F32, 10, 9, &|t| t[0].softmax(-1))?;
    both("softmax axis 0", &[x()], &F64_F32, 10, 4, &|t| {
        t[0].softmax(0)
    })?;
    both("log_softmax", &[x()], &F64_F32, 10, 9, &|t| {
        t[0].log_softmax(-1)
    })?;
    let w = Input::uniform(&[9], 801, 0.5, 1.5);
    let b = Input::uniform(&[9], 802, -1.0, 1.0);
    both("layer_norm", &[x(), w, b], &F64_F32, 20, 9, &|t| {
        t[0].layer_norm(1, Some(&t[1]), Some(&t[2]), 1e-5)
    })
}

#[test]
fn concat_index_select_gather() -> Result<()> {
    let a = Input::uniform(&[3, 2], 900, -1.0, 1.0);
    let b = Input::uniform(&[3, 4], 901, -1.0, 1.0).transposed();
    both("concat", &[a, b], &F64_F32, 3, 1, &|t| {
        Tensor::concat(&[&t[0], &t[1]], 1)?.exp()
    })?;
    let x = Input::uniform(&[5, 3], 902, -1.0, 1.0);
    both(
        "index_select with repeats",
        std::slice::from_ref(&x),
        &F64_F32,
        3,
        5,
        &|t| {
            let idx = Tensor::from_vec(vec![4i32, 0, 4, 2, 4, 1], [6], t[0].device())?;
            t[0].index_select(0, &idx)?.mul_scalar(2.0)
        },
    )?;
    both("gather along 1", &[x], &F64_F32, 3, 3, &|t| {
        let idx = Tensor::from_vec(vec![2i32, 0, 1, 1, 0, 0, 2, 2], [4, 2], t[0].device())?;
        t[0].gather(1, &idx)?.exp()
    })
}

#[test]
fn cast_passes_the_gradient_back_in_the_input_dtype() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &[DType::F32, DType::F16, DType::BF16]) {
        let x = leaf(&[0.5, -1.0, 2.0], &[3], dtype, &d)?.requires_grad();
        let y = x.cast(DType::F32)?.mul_scalar(3.0)?.sum(&[], false)?;
        let g = autograd::grad(&y, &[&x])?;
        assert_eq!(g[0].dtype(), dtype);
        assert_eq!(g[0].to_vec_f64()?, vec![3.0, 3.0, 3.0]);
    }
    Ok(())
}

#[test]
fn detached_views_pass_no_gradient_back() -> Result<()> {
    // d/dx Σ x·detach(x) = detach(x) = x (not 2x); the detached operand's
    // values are unchanged, and a detached branch alone gives a zero.
    let d = dev!();
    let x = leaf(&[0.5, -1.0, 2.0, 3.0], &[4], DType::F32, &d)?.requires_grad();
    let y = x.mul(&x.detach()?)?.sum(&[], false)?;
    let g = autograd::grad(&y, &[&x])?;
    assert_eq!(g[0].to_vec_f64()?, vec![0.5, -1.0, 2.0, 3.0]);
    assert_eq!(y.to_vec_f64()?, vec![0.25 + 1.0 + 4.0 + 9.0]);
    let only = x.detach()?.exp()?.sum(&[], false)?.add(&x.sum(&[], false)?.mul_scalar(0.0)?)?;
    assert_eq!(autograd::grad(&only, &[&x])?[0].to_vec_f64()?, vec![0.0; 4]);
    Ok(())
}

#[test]
fn gradients_accumulate_over_every_use() -> Result<()> {
    let x = Input::uniform(&[6], 1000, -1.0, 1.0);
    both("x*x + sin(x) + x", &[x], &F64_F32, 6, 1, &|t| {
        t[0].mul(&t[0])?.add(&t[0].sin()?)?.add(&t[0])
    })
}

#[test]
fn unused_targets_get_zero_and_realized_views_are_refused() -> Result<()> {
    let d = dev!();
    let x = randn(&[3], 1, DType::F32, &d)?.requires_grad();
    let unused = randn(&[2, 2], 2, DType::F32, &d)?.requires_grad();
    let g = autograd::grad(&x.sum(&[], false)?, &[&x, &unused])?;
    assert_eq!(g[1].to_vec::<f32>()?, vec![0.0; 4]);
    // A view taken of a realized tensor before requires_grad cannot carry
    // the gradient: an error, not a silent zero.
    let w = randn(&[2, 3], 3, DType::F32, &d)?;
    let loss = w.t()?.sum(&[], false)?;
    match autograd::grad(&loss, &[&w]) {
        Err(Error::InvalidArgument { op: "grad", .. }) => {}
        other => panic!("expected an InvalidArgument error, got {other:?}"),
    }
    // Non-scalar outputs need an explicit cotangent.
    assert!(matches!(
        autograd::grad(&x, &[&x]),
        Err(Error::InvalidArgument { .. })
    ));
    let ct = leaf(&[1.0, 2.0, 3.0], &[3], DType::F32, &d)?;
    let g = autograd::vjp(&x.mul_scalar(2.0)?, &ct, &[&x])?;
    assert_eq!(g[0].to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
    Ok(())
}

#[test]
fn relu_backward_fuses_with_the_incoming_gradient() -> Result<()> {
    let d = dev!();
    // y = relu(x * w); dL/dx = where(x*w > 0, g, 0) * w with g = dL/dy =
    // r (the loss weights): the mask, the product with w and the incoming
    // gradient are one elementwise kernel.
    let x = randn(&[64, 64], 1, DType::F32, &d)?.requires_grad();
    let w = randn(&[64, 64], 2, DType::F32, &d)?;
    let r = randn(&[64, 64], 3, DType::F32, &d)?;
    let y = x.mul(&w)?.relu()?;
    let gx = &autograd::vjp(&y, &r, &[&x])?[0];
    assert_eq!(kernels(gx)?, 1, "relu backward fused into one kernel");
    assert!(kernels_unfused(gx)? >= 3);
    check_ops("relu backward", gx, 3)?;
    // Through a matmul: dL/da = (relu mask * g) @ w^T, the mask fuses into
    // the matmul's input side or its producer: at most two kernels.
    let a = randn(&[32, 48], 4, DType::F32, &d)?.requires_grad();
    let m = randn(&[48, 16], 5, DType::F32, &d)?;
    let g = randn(&[32, 16], 6, DType::F32, &d)?;
    let h = a.matmul(&m)?.relu()?;
    let ga = &autograd::vjp(&h, &g, &[&a])?[0];
    let n = kernels(ga)?;
    assert!(n <= 2, "matmul + relu backward took {n} kernels");
    check_tol(
        "matmul relu backward",
        ga,
        Tol::of(DType::F32).ops(3).reduce(16),
    )?;
    Ok(())
}
