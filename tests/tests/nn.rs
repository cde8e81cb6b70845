//! nn building blocks and optimisers on the CPU: conv2d and pooling against
//! direct f64 loops, their gradients against finite differences, the
//! losses, Adam/AdamW/SGD against their formulas in f64, loss scaling,
//! autocast, batch norm and dropout.

use fusegraph_core::backend::cpu::reference;
use fusegraph_core::nn::{self, BatchNorm2d, Conv2dOptions, DataLayout, Dropout, Linear, Param};
use fusegraph_core::optim::{Adam, AdamOptions, GradScaler, Optimizer, Sgd};
use fusegraph_core::{autograd, DType, Device, Result, Tensor};
use fusegraph_tests::gradcheck::{check_backend, check_fd, Input};
use fusegraph_tests::{compare, kernels, leaf, Tol};

const CPU: Device = Device::Cpu;

/// Direct 2-D cross-correlation in f64 over NCHW data.
#[allow(clippy::too_many_arguments)]
fn conv_direct(
    x: &[f64],
    [n, c, h, w]: [usize; 4],
    k: &[f64],
    [o, _, kh, kw]: [usize; 4],
    bias: &[f64],
    opts: Conv2dOptions,
) -> (Vec<f64>, [usize; 4]) {
    let (sh, sw) = opts.stride;
    let (ph, pw) = opts.padding;
    let (dh, dw) = opts.dilation;
    let oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    let ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    let mut out = vec![0.0; n * o * oh * ow];
    for b in 0..n {
        for oc in 0..o {
            for i in 0..oh {
                for j in 0..ow {
                    let mut acc = bias[oc];
                    for ic in 0..c {
                        for u in 0..kh {
                            for v in 0..kw {
                                let y = (i * sh + u * dh) as isize - ph as isize;
                                let xx = (j * sw + v * dw) as isize - pw as isize;
                                if y < 0 || xx < 0 || y >= h as isize || xx >= w as isize {
                                    continue;
                                }
                                let xi = ((b * c + ic) * h + y as usize) * w + xx as usize;
                                acc += x[xi] * k[((oc * c + ic) * kh + u) * kw + v];
                            }
                        }
                    }
                    out[((b * o + oc) * oh + i) * ow + j] = acc;
                }
            }
        }
    }
    (out, [n, o, oh, ow])
}

fn nchw_to_nhwc(v: &[f64], [n, c, h, w]: [usize; 4]) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    for b in 0..n {
        for ch in 0..c {
            for i in 0..h {
                for j in 0..w {
                    out[((b * h + i) * w + j) * c + ch] = v[((b * c + ch) * h + i) * w + j];
                }
            }
        }
    }
    out
}

#[test]
fn conv2d_matches_direct_convolution_nchw_and_nhwc() -> Result<()> {
    let cases = [
        (Conv2dOptions::default(), [2, 3, 7, 6], [4, 3, 3, 3]),
        (
            Conv2dOptions::default().padding(1),
            [1, 2, 5, 5],
            [3, 2, 3, 3],
        ),
        (
            Conv2dOptions::default().stride(2).padding(1),
            [2, 2, 7, 8],
            [3, 2, 3, 3],
        ),
        (
            Conv2dOptions::default().dilation(2).padding(2),
            [1, 3, 8, 7],
            [2, 3, 3, 3],
        ),
        (
            Conv2dOptions {
                stride: (2, 1),
                padding: (0, 1),
                dilation: (1, 2),
                layout: DataLayout::Nchw,
            },
            [2, 2, 6, 6],
            [2, 2, 2, 3],
        ),
    ];
    for (ci, (opts, xs, ks)) in cases.into_iter().enumerate() {
        let x = Input::uniform(&xs, 10 + ci as u64, -1.0, 1.0);
        let k = Input::uniform(&ks, 20 + ci as u64, -1.0, 1.0);
        let b = Input::uniform(&[ks[0]], 30 + ci as u64, -1.0, 1.0);
        let (want, out_shape) = conv_direct(&x.values, xs, &k.values, ks, &b.values, opts);
        let red = ks[1] * ks[2] * ks[3];
        for dtype in [DType::F64, DType::F32] {
            let xt = leaf(&x.values, &xs, dtype, &CPU)?;
            let kt = leaf(&k.values, &ks, dtype, &CPU)?;
            let bt = leaf(&b.values, &[ks[0]], dtype, &CPU)?;
            let y = xt.conv2d(&kt, Some(&bt), opts)?;
            assert_eq!(y.shape(), out_shape.as_slice(), "case {ci}");
            let tol = Tol::of(dtype).ops(2).reduce(red);
            compare(
                &format!("conv2d nchw case {ci} ({dtype})"),
                &y.to_vec_f64()?,
                &want,
                tol,
            )
            .unwrap();
            // The same data channels-last.
            let xn = leaf(
                &nchw_to_nhwc(&x.values, xs),
                &[xs[0], xs[2], xs[3], xs[1]],
                dtype,
                &CPU,
            )?;
            let yn = xn.conv2d(&kt, Some(&bt), opts.layout(DataLayout::Nhwc))?;
            let want_n = nchw_to_nhwc(&want, out_shape);
            compare(
                &format!("conv2d nhwc case {ci} ({dtype})"),
                &yn.to_vec_f64()?,
                &want_n,
                tol,
            )
            .unwrap();
        }
    }
    Ok(())
}

#[test]
fn conv2d_gradients_match_finite_differences() -> Result<()> {
    let x = Input::uniform(&[2, 2, 5, 5], 40, -1.0, 1.0);
    let k = Input::uniform(&[3, 2, 3, 3], 41, -1.0, 1.0);
    let b = Input::uniform(&[3], 42, -1.0, 1.0);
    for opts in [
        Conv2dOptions::default().padding(1),
        Conv2dOptions::default().stride(2).dilation(2).padding(1),
        Conv2dOptions::default().padding(1).layout(DataLayout::Nhwc),
        // Unequal along H and W, so a swapped axis in the window gradient shows.
        Conv2dOptions {
            stride: (2, 1),
            padding: (0, 2),
            dilation: (1, 2),
            layout: DataLayout::Nchw,
        },
    ] {
        let f = move |t: &[Tensor]| t[0].conv2d(&t[1], Some(&t[2]), opts);
        let inputs = if opts.layout == DataLayout::Nhwc {
            let mut xn = x.clone();
            xn.values = nchw_to_nhwc(&x.values, [2, 2, 5, 5]);
            xn.shape = vec![2, 5, 5, 2];
            [xn, k.clone(), b.clone()]
        } else {
            [x.clone(), k.clone(), b.clone()]
        };
        check_fd(&format!("conv2d {opts:?}"), &inputs, &f)?;
        check_backend(
            &format!("conv2d {opts:?}"),
            &inputs,
            DType::F32,
            &CPU,
            Tol::of(DType::F32).ops(6).reduce(50),
            &f,
        )?;
    }
    Ok(())
}

#[test]
fn conv2d_input_gradient_is_built_from_graph_ops_not_a_gather() -> Result<()> {
    // The window view's gradient is conv2d's backward-data convolution of
    // the (spread) output gradient: no index table, no gather kernel, and
    // no padded copy of the nine-fold window gradient.
    let uniform = |shape: &[usize], seed| {
        leaf(
            &Input::uniform(shape, seed, -1.0, 1.0).values,
            shape,
            DType::F32,
            &CPU,
        )
    };
    let x = uniform(&[2, 3, 9, 9], 43)?.requires_grad();
    let w = uniform(&[4, 3, 3, 3], 44)?;
    for opts in [
        Conv2dOptions::default().padding(1),
        Conv2dOptions::default().stride(2).padding(1),
    ] {
        let y = x.conv2d(&w, None, opts)?;
        let loss = y.mul(&y)?.sum(&[], false)?;
        let g = autograd::grad(&loss, &[&x])?.remove(0);
        let compiled = fusegraph_core::runtime::compiled_for(
            std::slice::from_ref(&g),
            &fusegraph_core::passes::Limits::cpu(),
        )?;
        let padded_windows = compiled
            .schedule
            .steps
            .iter()
            .filter(|s| s.kernel.kind() == "concat" && s.kernel.out_shape.len() == 6)
            .count();
        assert_eq!(
            padded_windows, 0,
            "{opts:?}: the window gradient padded the [n, oh, ow, kh, kw, c] tensor"
        );
        let scope = fusegraph_core::profile::Scope::start();
        g.realize()?;
        let report = scope.finish();
        let me = fusegraph_core::profile::thread_id();
        let kinds: Vec<&str> = report
            .records
            .iter()
            .filter(|r| r.thread == me)
            .map(|r| r.kind)
            .collect();
        assert!(!kinds.is_empty(), "{opts:?}: no kernels recorded");
        assert!(!kinds.contains(&"index_select"), "{opts:?}: {kinds:?}");
    }
    Ok(())
}

#[test]
fn pooling_forward_and_gradients() -> Result<()> {
    let x = Input::uniform(&[2, 3, 6, 6], 50, -1.0, 1.0);
    let xt = leaf(&x.values, &x.shape, DType::F64, &CPU)?;
    // 2x2 windows, stride 2: direct maxima and means.
    let mp = xt
        .max_pool2d((2, 2), Conv2dOptions::default().stride(2))?
        .to_vec_f64()?;
    let ap = xt
        .avg_pool2d((2, 2), Conv2dOptions::default().stride(2))?
        .to_vec_f64()?;
    let at = |b: usize, c: usize, i: usize, j: usize| x.values[((b * 3 + c) * 6 + i) * 6 + j];
    let (mut wm, mut wa) = (vec![], vec![]);
    for b in 0..2 {
        for c in 0..3 {
            for i in 0..3 {
                for j in 0..3 {
                    let v = [
                        at(b, c, 2 * i, 2 * j),
                        at(b, c, 2 * i + 1, 2 * j),
                        at(b, c, 2 * i, 2 * j + 1),
                        at(b, c, 2 * i + 1, 2 * j + 1),
                    ];
                    wm.push(v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
                    wa.push(v.iter().sum::<f64>() / 4.0);
                }
            }
        }
    }
    compare("max_pool2d", &mp, &wm, Tol::of(DType::F64)).unwrap();
    compare("avg_pool2d", &ap, &wa, Tol::of(DType::F64).ops(2)).unwrap();
    // Overlapping 3x3 windows, stride 2, padding 1 go through as_strided.
    let over = Conv2dOptions::default().stride(2).padding(1);
    let y = xt.max_pool2d((3, 3), over)?;
    assert_eq!(y.shape(), &[2, 3, 3, 3]);
    let y00 = (0..2)
        .flat_map(|i| (0..2).map(move |j| (i, j)))
        .map(|(i, j)| at(0, 0, i, j))
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(
        y.to_vec_f64()?[0],
        y00,
        "the first window sees the padding and a 2x2 corner"
    );
    for (name, opts, max) in [
        ("max_pool 2x2", Conv2dOptions::default().stride(2), true),
        ("avg_pool 2x2", Conv2dOptions::default().stride(2), false),
        ("max_pool 3x3 s2 p1", over, true),
        (
            "avg_pool 3x3 s2 p1 nhwc",
            over.layout(DataLayout::Nhwc),
            false,
        ),
    ] {
        let f = move |t: &[Tensor]| {
            if max {
                t[0].max_pool2d(if opts.padding.0 == 1 { (3, 3) } else { (2, 2) }, opts)
            } else {
                t[0].avg_pool2d(if opts.padding.0 == 1 { (3, 3) } else { (2, 2) }, opts)
            }
        };
        check_fd(name, std::slice::from_ref(&x), &f)?;
        check_backend(
            name,
            std::slice::from_ref(&x),
            DType::F32,
            &CPU,
            Tol::of(DType::F32).ops(4).reduce(9),
            &f,
        )?;
    }
    Ok(())
}

#[test]
fn cross_entropy_matches_its_formula_and_gradient() -> Result<()> {
    let logits = Input::uniform(&[5, 4], 60, -3.0, 3.0);
    let labels = [3i32, 0, 1, 1, 2];
    let lt = leaf(&logits.values, &[5, 4], DType::F64, &CPU)?;
    let lab = Tensor::from_vec(labels.to_vec(), [5], &CPU)?;
    let got = lt.cross_entropy(&lab)?.item::<f64>()?;
    let mut want = 0.0;
    for (r, &l) in labels.iter().enumerate() {
        let row = &logits.values[r * 4..r * 4 + 4];
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        want += lse - row[l as usize];
    }
    want /= 5.0;
    assert!((got - want).abs() < 1e-12, "cross_entropy {got} vs {want}");
    let f = move |t: &[Tensor]| {
        let lab = Tensor::from_vec(labels.to_vec(), [5], t[0].device())?;
        t[0].cross_entropy(&lab)?.reshape([1])
    };
    check_fd("cross_entropy", std::slice::from_ref(&logits), &f)?;
    check_backend(
        "cross_entropy",
        &[logits],
        DType::F32,
        &CPU,
        Tol::of(DType::F32).ops(10).reduce(5),
        &f,
    )?;
    Ok(())
}

/// A fixed parameter and a fixed sequence of gradients, as f64 vectors.
fn problem() -> (Vec<f64>, Vec<Vec<f64>>) {
    let p = Input::uniform(&[12], 70, -1.0, 1.0).values;
    let gs = (0..5)
        .map(|s| Input::uniform(&[12], 71 + s, -2.0, 2.0).values)
        .collect();
    (p, gs)
}

fn run_optimizer(opt: &mut dyn Optimizer, param: &Param, gs: &[Vec<f64>]) -> Result<Vec<f64>> {
    for g in gs {
        let gt = leaf(g, &[12], DType::F32, &CPU)?;
        opt.step(&[gt], &[])?;
    }
    param.value().to_vec_f64()
}

#[test]
fn adam_and_adamw_follow_their_formulas() -> Result<()> {
    let (p0, gs) = problem();
    for decoupled in [false, true] {
        let o = AdamOptions {
            lr: 0.01,
            weight_decay: 0.1,
            decoupled,
            ..Default::default()
        };
        let param = Param::new(leaf(&p0, &[12], DType::F32, &CPU)?)?;
        let mut opt = Adam::new(vec![param.clone()], o)?;
        let got = run_optimizer(&mut opt, &param, &gs)?;
        // The same steps in f64.
        let (mut p, mut m, mut v) = (p0.clone(), vec![0.0; 12], vec![0.0; 12]);
        for (t, g) in gs.iter().enumerate() {
            let t = t as i32 + 1;
            for i in 0..12 {
                let mut gi = g[i];
                if decoupled {
                    p[i] *= 1.0 - o.lr * o.weight_decay;
                } else {
                    gi += o.weight_decay * p[i];
                }
                m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * gi;
                v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * gi * gi;
                let mh = m[i] / (1.0 - o.beta1.powi(t));
                let vh = v[i] / (1.0 - o.beta2.powi(t));
                p[i] -= o.lr * mh / (vh.sqrt() + o.eps);
            }
        }
        // f32 state, 5 steps of ~10 rounding ops each.
        compare(
            &format!("adam decoupled={decoupled}"),
            &got,
            &p,
            Tol::of(DType::F32).ops(50),
        )
        .unwrap();
    }
    Ok(())
}

#[test]
fn sgd_with_momentum_follows_its_formula() -> Result<()> {
    let (p0, gs) = problem();
    let param = Param::new(leaf(&p0, &[12], DType::F32, &CPU)?)?;
    let mut opt = Sgd::new(vec![param.clone()], 0.1, 0.9, 0.01);
    let got = run_optimizer(&mut opt, &param, &gs)?;
    let (mut p, mut buf) = (p0.clone(), vec![0.0; 12]);
    for (t, g) in gs.iter().enumerate() {
        for i in 0..12 {
            let d = g[i] + 0.01 * p[i];
            buf[i] = if t == 0 { d } else { 0.9 * buf[i] + d };
            p[i] -= 0.1 * buf[i];
        }
    }
    compare("sgd momentum", &got, &p, Tol::of(DType::F32).ops(25)).unwrap();
    Ok(())
}

#[test]
fn steps_in_place_match_ordinary_steps_and_set_state_checks_its_input() -> Result<()> {
    let (p0, gs) = problem();
    type Make = fn(Param) -> Result<Box<dyn Optimizer>>;
    let makers: [(&str, Make); 2] = [
        ("adam", |p| {
            Ok(Box::new(Adam::new(vec![p], AdamOptions::adamw(0.01))?))
        }),
        ("sgd", |p| Ok(Box::new(Sgd::new(vec![p], 0.1, 0.9, 0.01)))),
    ];
    for (name, make) in makers {
        let plain_param = Param::new(leaf(&p0, &[12], DType::F32, &CPU)?)?;
        let want = run_optimizer(make(plain_param.clone())?.as_mut(), &plain_param, &gs)?;
        // One ordinary step creates the state; the rest write it in place.
        let param = Param::new(leaf(&p0, &[12], DType::F32, &CPU)?)?;
        let mut opt = make(param.clone())?;
        for (i, g) in gs.iter().enumerate() {
            let gt = leaf(g, &[12], DType::F32, &CPU)?;
            if i == 0 {
                opt.step(&[gt], &[])?;
            } else {
                opt.step_in_place(&[gt], &[])?;
            }
        }
        assert_eq!(
            param.value().to_vec_f64()?,
            want,
            "{name}: in place vs ordinary steps"
        );
        // A state with a tensor missing, or of another shape, is refused and
        // changes nothing.
        let mut state = opt.state();
        state.pop();
        let short = opt.set_state(state).unwrap_err().to_string();
        assert!(short.contains(name) && short.contains("state"), "{short}");
        let mut state = opt.state();
        state[0] = leaf(&p0[..6], &[6], DType::F32, &CPU)?;
        let shape = opt.set_state(state).unwrap_err().to_string();
        assert!(shape.contains("[6]") && shape.contains("[12]"), "{shape}");
        assert_eq!(
            param.value().to_vec_f64()?,
            want,
            "{name}: a refused state changed the parameter"
        );
    }
    Ok(())
}

#[test]
fn parameters_with_equal_gradients_keep_separate_state_for_steps_in_place() -> Result<()> {
    // loss = sum((a + b) * x): a and b get the same gradient expression, as
    // two batch-norm biases summed in a residual block do.
    let x = leaf(&[0.5, -1.0, 2.0], &[3], DType::F32, &CPU)?;
    type Make = fn(Vec<Param>) -> Result<Box<dyn Optimizer>>;
    let makers: [(&str, Make); 2] = [
        ("adam", |p| {
            Ok(Box::new(Adam::new(p, AdamOptions::default())?))
        }),
        ("sgd", |p| Ok(Box::new(Sgd::new(p, 0.1, 0.9, 0.0)))),
    ];
    for (name, make) in makers {
        let a = Param::new(leaf(&[1.0, 2.0, 3.0], &[3], DType::F32, &CPU)?)?;
        let b = Param::new(leaf(&[-1.0, 0.0, 1.0], &[3], DType::F32, &CPU)?)?;
        let mut opt = make(vec![a.clone(), b.clone()])?;
        for i in 0..3 {
            let (wa, wb) = (a.get(), b.get());
            let loss = wa.add(&wb)?.mul(&x)?.sum(&[], false)?;
            let g = autograd::grad(&loss, &[&wa, &wb])?;
            if i == 0 {
                opt.step(&g, &[])?;
            } else {
                opt.step_in_place(&g, &[])?;
            }
        }
        let state = opt.state();
        for (i, s) in state.iter().enumerate() {
            assert!(
                !state[..i].iter().any(|t| t.shares_storage(s)),
                "{name}: state tensor {i} shares a buffer"
            );
        }
        // Both parameters moved by the same amount (equal gradients), up to
        // the rounding of values of different magnitudes.
        let (da, db) = (a.value().to_vec_f64()?, b.value().to_vec_f64()?);
        for (k, (wa, wb)) in [(1.0, -1.0), (2.0, 0.0), (3.0, 1.0)]
            .into_iter()
            .enumerate()
        {
            let (ma, mb) = (da[k] - wa, db[k] - wb);
            assert!(
                (ma - mb).abs() <= 1e-6 && ma.abs() > 1e-4,
                "{name}: moved {ma} vs {mb}"
            );
        }
    }
    Ok(())
}

#[test]
fn the_update_of_each_parameter_is_fused() -> Result<()> {
    // The Adam update of one parameter, as the optimiser builds it:
    // m' and v' are one kernel each, the parameter one more (it reads m'
    // and v'), and with fusion off it is more than a dozen.
    let w = leaf(
        &Input::uniform(&[64], 80, -1.0, 1.0).values,
        &[64],
        DType::F32,
        &CPU,
    )?;
    let g = leaf(
        &Input::uniform(&[64], 81, -1.0, 1.0).values,
        &[64],
        DType::F32,
        &CPU,
    )?;
    let m = w.zeros_like()?;
    let v = w.zeros_like()?;
    Tensor::realize_all(&[m.clone(), v.clone()])?;
    let m2 = m.mul_scalar(0.9)?.add(&g.mul_scalar(0.1)?)?;
    let v2 = v.mul_scalar(0.999)?.add(&g.mul(&g)?.mul_scalar(0.001)?)?;
    let p2 = w.sub(&m2.mul_scalar(0.01)?.div(&v2.sqrt()?.add_scalar(1e-8)?)?)?;
    assert_eq!(kernels(&p2)?, 1, "the parameter update alone is one kernel");
    assert_eq!(kernels(&m2)?, 1);
    Ok(())
}

#[test]
fn grad_scaler_skips_non_finite_steps_and_moves_the_scale() -> Result<()> {
    let param = Param::new(leaf(&[1.0, 2.0], &[2], DType::F32, &CPU)?)?;
    let mut opt = Sgd::new(vec![param.clone()], 0.5, 0.0, 0.0);
    let mut scaler = GradScaler::new(1024.0, 2);
    // loss = sum(w²) → scaled gradient 2·w·scale.
    let w = param.get();
    let loss = w.mul(&w)?.sum(&[], false)?;
    let g = autograd::grad(&scaler.scale(&loss)?, &[&w])?;
    assert!(scaler.step(&mut opt, &g, &[loss])?);
    assert_eq!(param.value().to_vec::<f32>()?, vec![0.0, 0.0], "w - 0.5·2w");
    // An inf gradient: the step is skipped and the scale halves.
    let bad = leaf(&[f64::INFINITY, 1.0], &[2], DType::F32, &CPU)?;
    assert!(!scaler.step(&mut opt, &[bad], &[])?);
    assert_eq!(scaler.scale, 512.0);
    assert_eq!(scaler.skipped, 1);
    assert_eq!(param.value().to_vec::<f32>()?, vec![0.0, 0.0]);
    let nan = leaf(&[f64::NAN, 1.0], &[2], DType::F32, &CPU)?;
    assert!(!scaler.step(&mut opt, &[nan], &[])?);
    assert_eq!(scaler.scale, 256.0);
    // Two clean steps in a row double it.
    for _ in 0..2 {
        let ok = leaf(&[256.0, 512.0], &[2], DType::F32, &CPU)?;
        assert!(scaler.step(&mut opt, &[ok], &[])?);
    }
    assert_eq!(scaler.scale, 512.0);
    assert_eq!(
        param.value().to_vec::<f32>()?,
        vec![-1.0, -2.0],
        "two steps of 0.5·[1, 2]"
    );
    Ok(())
}

#[test]
fn autocast_computes_layers_in_half_precision_with_f32_gradients() -> Result<()> {
    let lin = Linear::new(8, 4, true, 1, &CPU)?;
    let x = leaf(
        &Input::uniform(&[3, 8], 90, -1.0, 1.0).values,
        &[3, 8],
        DType::F32,
        &CPU,
    )?;
    for dtype in [DType::BF16, DType::F16] {
        let y = nn::autocast(dtype, || lin.forward(&x))?;
        assert_eq!(y.dtype(), dtype);
        let loss = y.cast(DType::F32)?.sum(&[], false)?;
        let leaves: Vec<Tensor> = lin.parameters().iter().map(Param::get).collect();
        let refs: Vec<&Tensor> = leaves.iter().collect();
        let g = autograd::grad(&loss, &refs)?;
        assert_eq!(g[0].dtype(), DType::F32, "master-weight gradient stays f32");
        // d loss / d bias = number of rows, exactly.
        assert_eq!(g[1].to_vec::<f32>()?, vec![3.0; 4]);
        // The weight gradient is x summed over rows, rounded to `dtype`.
        let want = reference::evaluate(&x.cast(dtype)?.sum(&[0], false)?.cast(DType::F32)?)?;
        for row in 0..4 {
            let got = g[0].narrow(0, row, 1)?.reshape([8])?.to_vec_f64()?;
            compare(
                "autocast weight grad",
                &got,
                want.as_slice().unwrap_or(&[]),
                Tol::of(dtype).ops(2).reduce(3),
            )
            .unwrap();
        }
    }
    assert!(nn::autocast_dtype().is_none(), "the scope closes");
    assert!(nn::autocast(DType::F32, || Ok(())).is_err());
    Ok(())
}

#[test]
fn batch_norm_and_dropout() -> Result<()> {
    let bn = BatchNorm2d::new(3, DataLayout::Nchw, &CPU)?;
    let x = Input::uniform(&[4, 3, 2, 2], 100, -2.0, 3.0);
    let xt = leaf(&x.values, &x.shape, DType::F32, &CPU)?;
    let y = bn.forward(&xt, true)?;
    // Per channel: mean 0, (population) variance ~1 after normalisation.
    let m = y.mean(&[0, 2, 3], false)?.to_vec_f64()?;
    let v = y.var(&[0, 2, 3], 0, false)?.to_vec_f64()?;
    for c in 0..3 {
        assert!(m[c].abs() < 1e-5, "mean {}", m[c]);
        assert!((v[c] - 1.0).abs() < 1e-3, "var {}", v[c]);
    }
    let (rm, rv) = bn.running_stats();
    Tensor::realize_all(&[rm.clone(), rv.clone()])?;
    let batch_mean = xt.mean(&[0, 2, 3], false)?.to_vec_f64()?;
    let batch_var = xt.var(&[0, 2, 3], 1, false)?.to_vec_f64()?;
    let want_m: Vec<f64> = batch_mean.iter().map(|b| 0.1 * b).collect();
    let want_v: Vec<f64> = batch_var.iter().map(|b| 0.9 + 0.1 * b).collect();
    compare(
        "running mean",
        &rm.to_vec_f64()?,
        &want_m,
        Tol::of(DType::F32).ops(4),
    )
    .unwrap();
    compare(
        "running var",
        &rv.to_vec_f64()?,
        &want_v,
        Tol::of(DType::F32).ops(8),
    )
    .unwrap();
    // The batch-norm gradient against finite differences (training mode).
    let f = |t: &[Tensor]| {
        let bn = BatchNorm2d::new(3, DataLayout::Nchw, t[0].device())?;
        bn.forward(&t[0], true)
    };
    check_fd("batch_norm", std::slice::from_ref(&x), &f)?;
    // A bf16 input (as autocast gives it) is normalised in f32 and comes
    // back in bf16, as PyTorch's batch norm does: the f32 result rounded.
    for dtype in [DType::BF16, DType::F16] {
        let bn = BatchNorm2d::new(3, DataLayout::Nchw, &CPU)?;
        let half = xt.cast(dtype)?;
        let y = bn.forward(&half, true)?;
        assert_eq!(y.dtype(), dtype, "batch norm output dtype");
        let want = BatchNorm2d::new(3, DataLayout::Nchw, &CPU)?
            .forward(&half.cast(DType::F32)?, true)?
            .cast(dtype)?
            .to_vec_f64()?;
        compare("half batch norm", &y.to_vec_f64()?, &want, Tol::of(dtype)).unwrap();
    }
    // Dropout: zero or scaled, about p dropped, a new mask each call.
    let d = Dropout::new(0.25, 7)?;
    let ones = Tensor::ones([4000], DType::F32, &CPU)?;
    let a = d.forward(&ones, true)?.to_vec::<f32>()?;
    let b = d.forward(&ones, true)?.to_vec::<f32>()?;
    assert!(a.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
    let dropped = a.iter().filter(|&&v| v == 0.0).count() as f64 / 4000.0;
    assert!((dropped - 0.25).abs() < 0.03, "dropped {dropped}");
    assert_ne!(a, b);
    assert_eq!(d.forward(&ones, false)?.to_vec::<f32>()?, vec![1.0; 4000]);
    Ok(())
}

#[test]
fn a_small_mlp_learns_xor() -> Result<()> {
    let x = Tensor::from_vec(
        vec![0.0f32, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0],
        [4, 2],
        &CPU,
    )?;
    let labels = Tensor::from_vec(vec![0i32, 1, 1, 0], [4], &CPU)?;
    let l1 = Linear::new(2, 16, true, 3, &CPU)?;
    let l2 = Linear::new(16, 2, true, 4, &CPU)?;
    let params: Vec<Param> = l1.parameters().into_iter().chain(l2.parameters()).collect();
    let mut opt = Adam::new(
        params,
        AdamOptions {
            lr: 0.05,
            ..Default::default()
        },
    )?;
    let mut last = f32::INFINITY;
    for _ in 0..200 {
        let loss = l2
            .forward(&l1.forward(&x)?.relu()?)?
            .cross_entropy(&labels)?;
        let leaves = opt.leaves();
        let refs: Vec<&Tensor> = leaves.iter().collect();
        let g = autograd::grad(&loss, &refs)?;
        opt.step(&g, std::slice::from_ref(&loss))?;
        last = loss.item::<f32>()?;
    }
    assert!(last < 0.05, "final loss {last}");
    let pred = l2
        .forward(&l1.forward(&x)?.relu()?)?
        .argmax(Some(-1), false)?;
    assert_eq!(pred.to_vec::<i32>()?, vec![0, 1, 1, 0]);
    Ok(())
}

/// The README's training snippet and the autograd module's doc example,
/// with `fusegraph_core` for `fusegraph` (which re-exports it).
#[test]
fn readme_training_snippet_runs() -> Result<()> {
    use fusegraph_core as fusegraph;
    let dev = Device::Cpu;
    let x = Tensor::randn([32, 8], 1, fusegraph::DType::F32, &dev)?;
    let labels = Tensor::from_vec((0..32).map(|i| i % 3).collect::<Vec<i32>>(), [32], &dev)?;
    let (l1, l2) = (
        Linear::new(8, 16, true, 1, &dev)?,
        Linear::new(16, 3, true, 2, &dev)?,
    );
    let params: Vec<Param> = [l1.parameters(), l2.parameters()].concat();
    let mut opt = Adam::new(params, AdamOptions::adamw(1e-2))?;
    let mut losses = vec![];
    for _ in 0..10 {
        let loss = l2
            .forward(&l1.forward(&x)?.relu()?)?
            .cross_entropy(&labels)?;
        let leaves = opt.leaves();
        let grads = autograd::grad(&loss, &leaves.iter().collect::<Vec<_>>())?;
        opt.step(&grads, std::slice::from_ref(&loss))?;
        losses.push(loss.item::<f32>()?);
    }
    assert!(losses[9] < losses[0], "loss falls: {losses:?}");

    let w = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], [3], &dev)?.requires_grad();
    let loss = w.mul(&w)?.sum(&[], false)?;
    let [gw]: [Tensor; 1] = autograd::grad(&loss, &[&w])?.try_into().unwrap();
    assert_eq!(gw.to_vec::<f32>()?, vec![2.0, -4.0, 6.0]);
    Ok(())
}

#[test]
fn batch_norm_backward_sums_dy_and_dy_times_centered_once_each() -> Result<()> {
    // The chain rule through batch norm's primitives asks for Σ g, Σ g·x̂,
    // Σ g·γ·(x - μ) and Σ g·γ·r (plus Σ (x - μ) through the variance);
    // with per-channel factors taken out of the sums and the variance's
    // mean detached, the graph keeps two backward sums, as a hand-written
    // batch norm backward does. Forward: the mean and the variance.
    let x = Input::uniform(&[4, 5, 5, 6], 120, -2.0, 3.0);
    let xt = leaf(&x.values, &x.shape, DType::F32, &CPU)?.requires_grad();
    let bn = BatchNorm2d::new(6, DataLayout::Nhwc, &CPU)?;
    let (w, b) = (bn.weight.get(), bn.bias.get());
    let y = bn.forward(&xt, true)?;
    let r = leaf(
        &Input::uniform(&x.shape, 121, -1.0, 1.0).values,
        &x.shape,
        DType::F32,
        &CPU,
    )?;
    let loss = y.mul(&r)?.sum(&[], false)?;
    let grads = autograd::grad(&loss, &[&xt, &w, &b])?;
    let compiled =
        fusegraph_core::runtime::compiled_for(&grads, &fusegraph_core::runtime::limits_for(CPU)?)?;
    let sums = compiled
        .schedule
        .steps
        .iter()
        .filter(|s| matches!(s.kernel.kind(), "reduce" | "rowwise"))
        .count();
    assert_eq!(sums, 4, "reductions in batch norm's forward and backward");
    // The gradients themselves are checked against finite differences in
    // `batch_norm_and_dropout`; here against the f64 reference of this graph.
    for (k, g) in grads.iter().enumerate() {
        let want: Vec<f64> = reference::evaluate(g)?.iter().copied().collect();
        compare(
            &format!("grad {k}"),
            &g.to_vec_f64()?,
            &want,
            Tol::of(DType::F32).ops(12).reduce(100),
        )
        .unwrap();
    }
    Ok(())
}
