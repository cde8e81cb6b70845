// Optimisers over packed parameters: every parameter of a dtype and device
// lives in one buffer and one step updates them all with a few kernels.

use fusegraph_core::nn::Param;
use fusegraph_core::optim::{Adam, AdamOptions, Optimizer, Sgd};
use fusegraph_core::runtime::{compiled_for, limits_for};
use fusegraph_tests::gradcheck::Input;

/// `values` (row-major over `[rows, cols]`) as a transposed view of a
/// `[cols, rows]` leaf: a gradient that is not contiguous.
fn transposed_leaf(values: &[f64], rows: usize, cols: usize, dev: &Device) -> Result<Tensor> {
    let mut t = vec![0.0; values.len()];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = values[i * cols + j];
        }
    }
    leaf(&t, &[cols, rows], DType::F32, dev)?.t()
}

/// SGD with momentum and AdamW over parameters of several shapes (one
/// with no elements), a gradient that is a transposed view and, where the
/// backend has f64, a parameter of a second dtype: each parameter moves
/// as the optimiser's formula does in f64, the f32 parameters are views of
/// one buffer (sizes that are multiples of 64 first), and a step is one
/// gather, one kernel per state buffer and group, and nothing per
/// parameter.
#[test]
fn optimisers_update_packed_parameters_as_their_formulas() -> Result<()> {
    let dev = dev!();
    let mut shapes: Vec<(Vec<usize>, DType)> = vec![
        (vec![3, 4], DType::F32),
        (vec![64], DType::F32),
        (vec![5], DType::F32),
        (vec![2, 3, 4], DType::F32),
        (vec![0], DType::F32),
    ];
    if supports(&dev, DType::F64) {
        shapes.push((vec![7], DType::F64));
    }
    let groups = if supports(&dev, DType::F64) { 2 } else { 1 };
    let (lr, momentum, decay) = (0.1, 0.9, 0.01);
    for adam in [false, true] {
        let params: Vec<Param> = shapes
            .iter()
            .enumerate()
            .map(|(i, (s, d))| {
                let v = Input::uniform(s, 90 + i as u64, -1.0, 1.0).values;
                Param::new(leaf(&v, s, *d, &dev)?)
            })
            .collect::<Result<_>>()?;
        let o = AdamOptions::adamw(0.01);
        let mut opt: Box<dyn Optimizer> = if adam {
            Box::new(Adam::new(params.clone(), o)?)
        } else {
            Box::new(Sgd::new(params.clone(), lr, momentum, decay))
        };
        let mut p: Vec<Vec<f64>> = params
            .iter()
            .map(|p| p.value().to_vec_f64())
            .collect::<Result<_>>()?;
        let mut m: Vec<Vec<f64>> = p.iter().map(|v| vec![0.0; v.len()]).collect();
        let mut v2 = m.clone();
        let mut grads = Vec::new();
        for t in 0..3 {
            let gv: Vec<Vec<f64>> = shapes
                .iter()
                .enumerate()
                .map(|(i, (s, _))| Input::uniform(s, 200 + 10 * t + i as u64, -2.0, 2.0).values)
                .collect();
            grads = shapes
                .iter()
                .zip(&gv)
                .enumerate()
                .map(|(i, ((s, d), g))| match i {
                    0 => transposed_leaf(g, 3, 4, &dev),
                    _ => leaf(g, s, *d, &dev),
                })
                .collect::<Result<_>>()?;
            opt.step(&grads, &[])?;
            // The same step in f64, element by element.
            let step = t as i32 + 1;
            for i in 0..p.len() {
                for k in 0..p[i].len() {
                    let g = gv[i][k];
                    if adam {
                        p[i][k] *= 1.0 - o.lr * o.weight_decay;
                        m[i][k] = o.beta1 * m[i][k] + (1.0 - o.beta1) * g;
                        v2[i][k] = o.beta2 * v2[i][k] + (1.0 - o.beta2) * g * g;
                        let mh = m[i][k] / (1.0 - o.beta1.powi(step));
                        let vh = v2[i][k] / (1.0 - o.beta2.powi(step));
                        p[i][k] -= o.lr * mh / (vh.sqrt() + o.eps);
                    } else {
                        let d = g + decay * p[i][k];
                        m[i][k] = if t == 0 { d } else { momentum * m[i][k] + d };
                        p[i][k] -= lr * m[i][k];
                    }
                }
            }
        }
        let name = if adam { "adamw" } else { "sgd" };
        for (i, (param, want)) in params.iter().zip(&p).enumerate() {
            let tol = Tol::of(shapes[i].1).ops(40);
            compare(
                &format!("{name} parameter {i} {:?}", shapes[i]),
                &param.value().to_vec_f64()?,
                want,
                tol,
            )
            .unwrap();
        }
        // Packed: the f32 parameters share one buffer, the 64-element one
        // first, then the others in order.
        let values: Vec<Tensor> = params.iter().map(Param::value).collect();
        for i in [0, 2, 3] {
            assert!(values[i].shares_storage(&values[1]), "{name}: {i} packed");
        }
        let offsets: Vec<usize> = [1, 0, 2, 3].iter().map(|&i| values[i].layout().offset).collect();
        assert_eq!(offsets, vec![0, 64, 76, 81], "{name}: packing order");
        // The kernels of one more step: the f32 group's gradients are
        // gathered by one concat (four parts: within every backend's
        // binding limit), after one copy of the transposed gradient (a
        // transposed view has no 1-D view; a computed gradient is written
        // contiguously by its own kernel instead); the f64 group's single
        // gradient is read where it is; then one kernel per state buffer
        // of each group (SGD: velocity and parameters; Adam: two moments
        // and parameters) and Adam's two bias corrections.
        let updates = opt.updates(&grads)?;
        let compiled = compiled_for(&updates, &limits_for(dev)?)?;
        let per_group = if adam { 3 } else { 2 };
        let expected = 2 + per_group * groups + if adam { 2 } else { 0 };
        assert_eq!(compiled.schedule.steps.len(), expected, "{name}: kernels of a step");
    }
    Ok(())
}

/// A parameter given a new value between steps no longer views its
/// group's buffer: the next step packs the group again and updates the new
/// value.
#[test]
fn a_parameter_replaced_between_steps_is_packed_again() -> Result<()> {
    let dev = dev!();
    let a = Param::new(leaf(&[1.0, 2.0, 3.0], &[3], DType::F32, &dev)?)?;
    let b = Param::new(leaf(&[4.0, 5.0], &[2], DType::F32, &dev)?)?;
    let mut opt = Sgd::new(vec![a.clone(), b.clone()], 0.5, 0.0, 0.0);
    let g = [
        leaf(&[1.0, 1.0, 1.0], &[3], DType::F32, &dev)?,
        leaf(&[2.0, 2.0], &[2], DType::F32, &dev)?,
    ];
    opt.step(&g, &[])?;
    assert!(a.value().shares_storage(&b.value()));
    a.set(leaf(&[10.0, 20.0, 30.0], &[3], DType::F32, &dev)?)?;
    assert!(!a.value().shares_storage(&b.value()));
    opt.step(&g, &[])?;
    assert_eq!(a.value().to_vec_f64()?, vec![9.5, 19.5, 29.5]);
    assert_eq!(b.value().to_vec_f64()?, vec![2.0, 3.0]);
    assert!(a.value().shares_storage(&b.value()), "packed again");
    // A new value of another size no longer fits its place: refused, with
    // the parameter named.
    a.set(leaf(&[1.0, 2.0], &[2], DType::F32, &dev)?)?;
    let g2 = [g[1].clone(), g[1].clone()];
    let err = opt.step(&g2, &[]).unwrap_err().to_string();
    assert!(err.contains("parameter 0") && err.contains("[2]"), "{err}");
    Ok(())
}

/// Gradients of more parameters than a kernel may bind on WebGPU (seven):
/// the gather becomes a small tree of concats and the step is still right.
#[test]
fn many_parameters_gather_within_the_binding_limit() -> Result<()> {
    let dev = dev!();
    let n = 20;
    let params: Vec<Param> = (0..n)
        .map(|i| Param::new(leaf(&[i as f64, -(i as f64)], &[2], DType::F32, &dev)?))
        .collect::<Result<_>>()?;
    let grads: Vec<Tensor> = (0..n)
        .map(|i| leaf(&[1.0, i as f64], &[2], DType::F32, &dev))
        .collect::<Result<_>>()?;
    let mut opt = Sgd::new(params.clone(), 0.25, 0.0, 0.0);
    opt.step(&grads, &[])?;
    for (i, p) in params.iter().enumerate() {
        let i = i as f64;
        assert_eq!(p.value().to_vec_f64()?, vec![i - 0.25, -i - 0.25 * i]);
    }
    Ok(())
}

/// A step kept in place (`step_in_place`, what a recorded CUDA graph
/// replays) gives the parameters an ordinary step gives, and every state
/// buffer stays the one it was: parameters, velocity, moments and Adam's
/// bias corrections are written, not replaced.
#[test]
fn steps_kept_in_place_match_ordinary_steps_and_keep_their_buffers() -> Result<()> {
    let dev = dev!();
    let shapes: [&[usize]; 3] = [&[3, 5], &[64], &[7]];
    let make_params = || -> Result<Vec<Param>> {
        shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let v = Input::uniform(s, 300 + i as u64, -1.0, 1.0).values;
                Param::new(leaf(&v, s, DType::F32, &dev)?)
            })
            .collect()
    };
    let grads = |t: u64| -> Result<Vec<Tensor>> {
        shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let v = Input::uniform(s, 400 + 10 * t + i as u64, -2.0, 2.0).values;
                leaf(&v, s, DType::F32, &dev)
            })
            .collect()
    };
    type Make = fn(Vec<Param>) -> Result<Box<dyn Optimizer>>;
    let makers: [(&str, Make); 2] = [
        ("sgd", |p| Ok(Box::new(Sgd::new(p, 0.1, 0.9, 0.01)))),
        ("adamw", |p| Ok(Box::new(Adam::new(p, AdamOptions::adamw(0.01))?))),
    ];
    for (name, make) in makers {
        let plain = make_params()?;
        let mut ordinary = make(plain.clone())?;
        let kept = make_params()?;
        let mut in_place = make(kept.clone())?;
        // One ordinary step makes the state; the rest write into it.
        ordinary.step(&grads(0)?, &[])?;
        in_place.step(&grads(0)?, &[])?;
        let before = in_place.state();
        for t in 1..4 {
            ordinary.step(&grads(t)?, &[])?;
            in_place.step_in_place(&grads(t)?, &[])?;
        }
        let after = in_place.state();
        assert_eq!(before.len(), after.len(), "{name}");
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            assert!(a.shares_storage(b), "{name}: state tensor {i} got a new buffer");
        }
        for (i, (p, q)) in plain.iter().zip(&kept).enumerate() {
            let want = p.value().to_vec_f64()?;
            // The same kernels on the same values: equal, not just close.
            assert_eq!(q.value().to_vec_f64()?, want, "{name}: parameter {i}");
            assert!(q.value().shares_storage(&after[0]), "{name}: parameter {i} views the buffer");
        }
    }
    Ok(())
}
