// Reductions: sum/max/min/mean/var/argmax over axis sets.

#[test]
fn reductions_over_single_multiple_and_all_axes_with_keepdim() -> Result<()> {
    let d = dev!();
    let shape = [3, 4, 5, 6];
    let axes_sets: [&[isize]; 7] = [&[0], &[-1], &[1, 2], &[0, 3], &[0, 1, 2], &[], &[-2, 0]];
    for dtype in supported(&d, &FLOATS) {
        let x = randn(&shape, 1, dtype, &d)?;
        for axes in axes_sets {
            let n: usize = if axes.is_empty() { 360 } else { axes.iter().map(|&a| shape[a.rem_euclid(4) as usize]).product() };
            for keepdim in [false, true] {
                let what = |op: &str| format!("{op} {dtype} axes {axes:?} keepdim {keepdim}");
                let s = x.sum(axes, keepdim)?;
                check_tol(&what("sum"), &s, Tol::of(dtype).reduce(n))?;
                check(&what("max"), &x.max(axes, keepdim)?)?;
                check(&what("min"), &x.min(axes, keepdim)?)?;
                check_tol(&what("mean"), &x.mean(axes, keepdim)?, Tol::of(dtype).ops(2).reduce(n))?;
                let rank = if keepdim { 4 } else { 4 - if axes.is_empty() { 4 } else { axes.len() } };
                assert_eq!(s.rank(), rank, "{}", what("sum rank"));
            }
        }
    }
    Ok(())
}

#[test]
fn sum_of_large_rows_and_long_single_row() -> Result<()> {
    let d = dev!();
    let x = randn(&[4, 5000], 2, DType::F32, &d)?;
    check_tol("sum rows of 5000", &x.sum(&[1], false)?, Tol::of(DType::F32).reduce(5000))?;
    check_tol("sum columns", &x.sum(&[0], false)?, Tol::of(DType::F32).reduce(4))?;
    // One row longer than 2^16: the CPU splits it across threads.
    let y = randn(&[70_000], 3, DType::F32, &d)?;
    check_tol("sum 70000", &y.sum(&[], false)?, Tol::of(DType::F32).reduce(70_000))?;
    check("max 70000", &y.max(&[], false)?)?;
    Ok(())
}

#[test]
fn reductions_of_transposed_and_narrowed_inputs() -> Result<()> {
    let d = dev!();
    let x = randn(&[6, 7, 8], 4, DType::F32, &d)?;
    let v = x.permute(&[2, 0, 1])?.narrow(1, 1, 4)?;
    for axes in [&[0isize][..], &[1, 2], &[]] {
        check_tol(&format!("sum of view {axes:?}"), &v.sum(axes, true)?, Tol::of(DType::F32).reduce(224))?;
        check(&format!("max of view {axes:?}"), &v.max(axes, false)?)?;
    }
    let e = randn(&[1, 8], 5, DType::F32, &d)?.expand([9, 8])?;
    check_tol("sum of expanded", &e.sum(&[0], false)?, Tol::of(DType::F32).reduce(9))?;
    Ok(())
}

#[test]
fn sum_of_integers_and_bool_gives_i32() -> Result<()> {
    let d = dev!();
    let u = Tensor::from_vec(vec![200u8, 100, 50, 7], [2, 2], &d)?;
    let s = u.sum(&[], false)?;
    assert_eq!(s.dtype(), DType::I32);
    assert_eq!(s.item::<i32>()?, 357);
    assert_eq!(u.sum(&[0], false)?.to_vec::<i32>()?, vec![250, 107]);
    let b = Tensor::from_vec(vec![true, true, false, true], [4], &d)?;
    assert_eq!(b.sum(&[], false)?.item::<i32>()?, 3);
    let i = randint(&[30, 40], 1, -1000, 1000, &d)?;
    check("sum i32", &i.sum(&[1], false)?)?;
    check("max i32", &i.max(&[0], false)?)?;
    check("min i32", &i.min(&[], false)?)?;
    let m = Tensor::from_vec(vec![1i32, 2, 4], [3], &d)?.mean(&[], false)?;
    assert_eq!(m.dtype(), DType::F32);
    assert!((m.item::<f32>()? - 7.0 / 3.0).abs() < 1e-6);
    Ok(())
}

#[test]
fn sum_over_empty_axis_is_zero_and_max_over_empty_is_an_error() -> Result<()> {
    let d = dev!();
    let z = Tensor::zeros([3, 0], DType::F32, &d)?;
    let s = z.sum(&[1], false)?;
    assert_eq!(s.shape(), &[3]);
    assert_eq!(s.to_vec::<f32>()?, vec![0.0; 3]);
    assert_eq!(z.sum(&[], false)?.item::<f32>()?, 0.0);
    assert_eq!(z.sum(&[0], false)?.shape(), &[0]);
    for (what, r) in [("max", z.max(&[1], false)), ("min", z.min(&[], false)), ("argmax", z.argmax(Some(1), false))] {
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{what} over an empty axis must be InvalidArgument, got {r:?}");
    }
    // Max over a non-empty axis of a tensor whose other axis is empty is fine.
    assert_eq!(z.max(&[0], false)?.shape(), &[0]);
    assert_eq!(Tensor::zeros([0, 3], DType::F32, &d)?.max(&[1], false)?.shape(), &[0]);
    // An empty leading axis under many lanes (the CPU's column kernel).
    let e = Tensor::from_vec(Vec::<f32>::new(), [2, 0, 16], &d)?;
    assert_eq!(e.sum(&[1], true)?.to_vec::<f32>()?, vec![0.0; 32]);
    assert_eq!(e.sum(&[0, 1], false)?.to_vec::<f32>()?, vec![0.0; 16]);
    Ok(())
}

#[test]
fn max_and_min_propagate_nan() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        let x = leaf(&[1.0, f64::NAN, 3.0, -1.0, 2.0, 0.5], &[2, 3], dtype, &d)?;
        let m = x.max(&[1], false)?.to_vec_f64()?;
        assert!(m[0].is_nan() && m[1] == 2.0, "max {dtype}: {m:?}");
        let n = x.min(&[1], false)?.to_vec_f64()?;
        assert!(n[0].is_nan() && n[1] == -1.0, "min {dtype}: {n:?}");
        assert!(x.max(&[], false)?.to_vec_f64()?[0].is_nan());
        check(&format!("max nan {dtype}"), &x.max(&[0], false)?)?;
    }
    Ok(())
}

/// Row kernels that keep a contiguous last axis (the CPU runs them as column
/// kernels: every output lane folds its own accumulator while the rows are
/// read in memory order). Stages that read earlier stages per lane, full
/// outputs, per-lane NaN and infinities, random and broadcast inputs, and a
/// span long enough to be split across threads.
#[test]
fn reductions_keeping_a_contiguous_last_axis() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        for (shape, axes) in [
            (vec![37, 16], vec![0isize]),
            (vec![5, 9, 3, 24], vec![1, 2]),
            (vec![3, 7, 40], vec![0, 1]),
        ] {
            let n: usize = axes.iter().map(|&a| shape[a as usize]).product();
            let what = |op: &str| format!("{op} {dtype} {shape:?} over {axes:?}");
            let x = randn(&shape, 31, dtype, &d)?;
            let y = randn(&shape, 32, dtype, &d)?;
            check_tol(&what("sum"), &x.sum(&axes, false)?, Tol::of(dtype).reduce(n))?;
            check(&what("max"), &x.max(&axes, true)?)?;
            check(&what("min"), &x.min(&axes, false)?)?;
            check_tol(&what("var"), &x.var(&axes, 1, true)?, Tol::of(dtype).ops(4).reduce(n))?;
            let mean = x.mean(&axes, true)?;
            let centered = x.sub(&mean)?;
            let norm = centered.mul(&centered.mul(&centered)?.mean(&axes, true)?.add_scalar(1e-5)?.rsqrt()?)?;
            check_tol(&what("normalised"), &norm, Tol::of(dtype).ops(8).reduce(n))?;
            check_tol(&what("sum of x*y+1"), &x.mul(&y)?.add_scalar(1.0)?.sum(&axes, true)?, Tol::of(dtype).ops(2).reduce(n))?;
            // A generated input (random numbers by linear index) and a
            // per-lane broadcast operand.
            let lane = randn(&[*shape.last().unwrap_or(&1)], 33, dtype, &d)?;
            let r = Tensor::randn(shape.clone(), 34, dtype, &d)?.mul(&lane)?;
            check_tol(&what("sum of randn * lane"), &r.sum(&axes, false)?, Tol::of(dtype).ops(2).reduce(n))?;
        }
        let x = randn(&[37, 16], 35, dtype, &d)?;
        check_tol(&format!("softmax over axis 0 {dtype}"), &x.softmax(0)?, Tol::of(dtype).ops(4).reduce(37))?;
        check_tol(&format!("log_softmax over axis 0 {dtype}"), &x.log_softmax(0)?, Tol::of(dtype).ops(4).reduce(37))?;
        // NaN and infinities in some lanes only.
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        let mut v: Vec<f64> = (0..48).map(|i| (i % 7) as f64 - 3.0).collect();
        v[8 + 1] = nan;
        v[16 + 2] = inf;
        v[3] = -inf;
        v[40 + 4] = nan;
        let z = leaf(&v, &[6, 8], dtype, &d)?;
        let m = z.max(&[0], false)?.to_vec_f64()?;
        assert!(m[1].is_nan() && m[4].is_nan() && m[2] == inf && m[0] == 2.0, "max {dtype}: {m:?}");
        let n = z.min(&[0], false)?.to_vec_f64()?;
        assert!(n[1].is_nan() && n[4].is_nan() && n[3] == -inf && n[0] == -3.0, "min {dtype}: {n:?}");
        check(&format!("max with nan lanes {dtype}"), &z.max(&[0], false)?)?;
        check(&format!("sum with nan lanes {dtype}"), &z.sum(&[0], false)?)?;
    }
    // Long enough that the CPU splits each lane row across threads.
    let x = randn(&[70_000, 16], 36, DType::F32, &d)?;
    check_tol("sum of 70000 rows", &x.sum(&[0], false)?, Tol::of(DType::F32).reduce(70_000))?;
    check("max of 70000 rows", &x.max(&[0], true)?)?;
    let c = x.sub(&x.mean(&[0], true)?)?;
    check_tol("variance of 70000 rows", &c.mul(&c)?.mean(&[0], false)?, Tol::of(DType::F32).ops(4).reduce(70_000))?;
    // Integer columns, exact.
    let u = randint(&[300, 3, 12], 37, -50, 50, &d)?;
    check_with_limits("integer column sum", &u.sum(&[0, 1], false)?, &Limits::cpu(), Tol::of(DType::I32))?;
    check("integer column max", &u.max(&[0], false)?)?;
    Ok(())
}

#[test]
fn argmax_first_maximum_wins_on_ties() -> Result<()> {
    let d = dev!();
    let x = leaf(&[1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 5.0, 0.0], &[2, 4], DType::F32, &d)?;
    let a = x.argmax(Some(1), false)?;
    assert_eq!(a.dtype(), DType::I32);
    assert_eq!(a.to_vec::<i32>()?, vec![1, 0]);
    assert_eq!(x.argmax(None, false)?.item::<i32>()?, 4);
    assert_eq!(x.argmax(Some(0), true)?.shape(), &[1, 4]);
    assert_eq!(x.argmax(Some(0), false)?.to_vec::<i32>()?, vec![1, 1, 1, 0]);
    check("argmax axis 1", &x.argmax(Some(-1), true)?)?;
    let all_neg_inf = leaf(&[f64::NEG_INFINITY; 5], &[5], DType::F32, &d)?;
    assert_eq!(all_neg_inf.argmax(None, false)?.item::<i32>()?, 0);
    let int = Tensor::from_vec(vec![4i32, 9, 9, 1], [4], &d)?;
    assert_eq!(int.argmax(Some(0), false)?.item::<i32>()?, 1);
    Ok(())
}

#[test]
fn argmax_ties_across_chunks_and_thread_splits() -> Result<()> {
    let d = dev!();
    // Ties 4000 apart cross the 2048-element chunk; a 70000-long row is split across threads.
    for len in [5000usize, 70_000] {
        let mut v = vec![0.0f64; len];
        v[100] = 7.0;
        v[len - 10] = 7.0;
        let x = leaf(&v, &[len], DType::F32, &d)?;
        assert_eq!(x.argmax(None, false)?.item::<i32>()?, 100, "len {len}");
        let mut w = vec![-1.0f64; len];
        w[len / 2] = 3.0;
        w[len - 1] = 3.0;
        assert_eq!(leaf(&w, &[len], wide(&d), &d)?.argmax(Some(0), false)?.item::<i32>()?, (len / 2) as i32, "len {len}");
    }
    Ok(())
}

#[test]
fn argmax_of_nan_is_the_first_nan() -> Result<()> {
    let d = dev!();
    let x = leaf(&[1.0, 9.0, f64::NAN, 10.0, f64::NAN], &[5], DType::F32, &d)?;
    assert_eq!(x.argmax(None, false)?.item::<i32>()?, 2);
    check("argmax nan", &x.argmax(Some(0), false)?)?;
    let mut v = vec![0.0; 5000];
    v[3000] = f64::NAN;
    v[4000] = 1.0;
    assert_eq!(leaf(&v, &[5000], DType::F32, &d)?.argmax(None, false)?.item::<i32>()?, 3000);
    Ok(())
}

#[test]
fn argmax_over_all_axes_of_a_matrix_is_row_major_flat_index() -> Result<()> {
    let d = dev!();
    let x = randn(&[7, 9], 6, DType::F32, &d)?;
    let v = x.to_vec::<f32>()?;
    let best = (0..v.len()).fold(0, |b, i| if v[i] > v[b] { i } else { b });
    assert_eq!(x.argmax(None, false)?.item::<i32>()? as usize, best);
    check("argmax over transposed rows", &x.t()?.argmax(Some(1), false)?)?;
    Ok(())
}

#[test]
fn mean_and_var_with_correction() -> Result<()> {
    let d = dev!();
    let wd = wide(&d);
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0], &[2, 4], wd, &d)?;
    assert_eq!(x.mean(&[1], false)?.to_vec_f64()?, vec![2.5, 25.0]);
    let v0 = x.var(&[1], 0, false)?.to_vec_f64()?;
    let v1 = x.var(&[1], 1, false)?.to_vec_f64()?;
    if wd == DType::F64 {
        assert!((v0[0] - 1.25).abs() < 1e-12 && (v0[1] - 125.0).abs() < 1e-10, "{v0:?}");
        assert!((v1[0] - 5.0 / 3.0).abs() < 1e-12 && (v1[1] - 500.0 / 3.0).abs() < 1e-10, "{v1:?}");
    } else {
        let t = Tol::of(wd).ops(4);
        for (got, want) in v0.iter().zip([1.25, 125.0]).chain(v1.iter().zip([5.0 / 3.0, 500.0 / 3.0])) {
            assert!(t.accepts(*got, want), "var {got} vs {want}");
        }
    }
    for dtype in supported(&d, &FLOATS) {
        let y = randn(&[5, 6, 7], 7, dtype, &d)?;
        for (axes, n) in [(&[-1isize][..], 7usize), (&[0, 2], 35), (&[], 210)] {
            for correction in [0usize, 1] {
                let v = y.var(axes, correction, true)?;
                check_tol(&format!("var {dtype} {axes:?} c={correction}"), &v, Tol::of(dtype).ops(4).reduce(n))?;
            }
            check_tol(&format!("mean {dtype} {axes:?}"), &y.mean(axes, false)?, Tol::of(dtype).ops(2).reduce(n))?;
        }
    }
    Ok(())
}

/// Realizes `t` under `limits` and compares it with the reference, which is
/// evaluated first (a realized tensor's reference would be its own values).
fn check_with_limits(what: &str, t: &Tensor, limits: &Limits, tol: Tol) -> Result<()> {
    let want: Vec<f64> = reference::evaluate(t)?.iter().copied().collect();
    fusegraph_core::runtime::realize_with(std::slice::from_ref(t), limits)?;
    if let Err(m) = compare(what, &t.to_vec_f64()?, &want, tol) {
        panic!("{m}");
    }
    Ok(())
}

/// Reductions over a few long rows: GPU targets split each row into chunks
/// (two kernels). `realize_with(Limits::webgpu())` asks for the split on any
/// backend, so the CPU stamp checks the split graph too.
#[test]
fn long_reductions_split_into_chunks_match_the_reference() -> Result<()> {
    let d = dev!();
    let split = Limits::webgpu();
    for (shape, axes) in [
        (vec![1 << 20], vec![]),
        (vec![3, 1 << 17], vec![1isize]),
        (vec![2, 256, 512], vec![1, 2]),
        (vec![1024, 1024], vec![]),
        // 65,537 is prime: no chunk count divides it, the reduction stays whole.
        (vec![65_537], vec![]),
    ] {
        let n: usize = if axes.is_empty() { shape.iter().product() } else { axes.iter().map(|&a| shape[a as usize]).product() };
        let x = randn(&shape, 7, DType::F32, &d)?;
        let y = randn(&shape, 8, DType::F32, &d)?;
        for keepdim in [false, true] {
            let what = |op: &str| format!("{op} of {shape:?} over {axes:?} keepdim {keepdim}");
            let cases = [
                ("sum", x.sum(&axes, keepdim)?, Tol::of(DType::F32).reduce(n)),
                ("max", x.max(&axes, keepdim)?, Tol::of(DType::F32)),
                ("min", x.min(&axes, keepdim)?, Tol::of(DType::F32)),
                ("mean", x.mean(&axes, keepdim)?, Tol::of(DType::F32).ops(2).reduce(n)),
                // A producer map fused into the first of the two kernels.
                ("sum of x*y+1", x.mul(&y)?.add_scalar(1.0)?.sum(&axes, keepdim)?, Tol::of(DType::F32).ops(2).reduce(n)),
            ];
            for (op, t, tol) in cases {
                check_with_limits(&what(op), &t, &split, tol)?;
            }
        }
    }
    // A narrowed view reshapes without a copy, so it splits too; integer sums stay exact.
    let x = randn(&[4, 1 << 17], 9, DType::F32, &d)?.narrow(0, 1, 2)?;
    let s = x.sum(&[], false)?;
    check_with_limits("sum of a narrowed view", &s, &split, Tol::of(DType::F32).reduce(1 << 18))?;
    let u = randint(&[1 << 18], 10, 0, 100, &d)?;
    check_with_limits("integer sum, split", &u.sum(&[], false)?, &split, Tol::of(DType::I32))?;
    Ok(())
}

#[test]
fn long_reductions_split_into_two_kernels_under_gpu_limits() -> Result<()> {
    let d = dev!();
    let x = randn(&[1 << 20], 11, DType::F32, &d)?;
    let y = randn(&[1 << 20], 12, DType::F32, &d)?;
    let s = x.mul(&y)?.sum(&[], false)?;
    let count = |limits: &Limits| -> Result<usize> {
        Ok(fusegraph_core::runtime::compiled_for(std::slice::from_ref(&s), limits)?.schedule.steps.len())
    };
    // The map fuses into the chunk reduction; the second kernel combines 1024 partials.
    assert_eq!(count(&Limits::webgpu())?, 2, "split: chunks, then their combination");
    assert_eq!(count(&Limits::cpu())?, 1, "the CPU reduces a long row across threads in one kernel");
    // Every long reduction of a graph splits (a training step has a hundred
    // or more), each into two kernels.
    let sums: Vec<Tensor> = (0..80).map(|i| x.mul_scalar(i as f64)?.sum(&[], false)).collect::<Result<_>>()?;
    let c = fusegraph_core::runtime::compiled_for(&sums, &Limits::webgpu())?;
    assert_eq!(c.schedule.steps.len(), 160, "80 long sums, each chunks then combination");
    // Many short rows fill a GPU already: no split.
    let m = randn(&[4096, 256], 13, DType::F32, &d)?.sum(&[1], false)?;
    let c = fusegraph_core::runtime::compiled_for(std::slice::from_ref(&m), &Limits::webgpu())?;
    assert_eq!(c.schedule.steps.len(), 1);
    Ok(())
}

/// Limits asking for the per-channel (column) split that CUDA uses, so that
/// every stamp checks the split graph.
fn column_split() -> Limits {
    Limits {
        split_column_reductions: true,
        ..Limits::webgpu()
    }
}

/// Reductions over the leading axes with many rows and contiguous kept axes
/// (batch norm's statistics of NHWC activations): split into per-chunk
/// partial results, one per (chunk, channel), and a combination.
#[test]
fn column_reductions_split_into_chunks_match_the_reference() -> Result<()> {
    let d = dev!();
    let split = column_split();
    for (shape, axes) in [
        (vec![16, 16, 16, 64], vec![0isize, 1, 2]),
        (vec![8192, 48], vec![0]),
        (vec![4, 1024, 2, 40], vec![0, 1]),
        // 4099 is prime: no chunk count divides it, the reduction stays whole.
        (vec![4099, 64], vec![0]),
    ] {
        let n: usize = axes.iter().map(|&a| shape[a as usize]).product();
        let x = randn(&shape, 21, DType::F32, &d)?;
        let y = randn(&shape, 22, DType::F32, &d)?;
        for keepdim in [false, true] {
            let what = |op: &str| format!("{op} of {shape:?} over {axes:?} keepdim {keepdim}");
            let mean = x.mean(&axes, true)?;
            let centered = x.sub(&mean)?;
            let cases = [
                ("sum", x.sum(&axes, keepdim)?, Tol::of(DType::F32).reduce(n)),
                ("max", x.max(&axes, keepdim)?, Tol::of(DType::F32)),
                ("min", x.min(&axes, keepdim)?, Tol::of(DType::F32)),
                ("sum of x*y+1", x.mul(&y)?.add_scalar(1.0)?.sum(&axes, keepdim)?, Tol::of(DType::F32).ops(2).reduce(n)),
                // The variance reads the mean broadcast over the split rows.
                ("variance", centered.mul(&centered)?.mean(&axes, keepdim)?, Tol::of(DType::F32).ops(4).reduce(n)),
            ];
            for (op, t, tol) in cases {
                check_with_limits(&what(op), &t, &split, tol)?;
            }
        }
        // Batch norm's normalised output, reading two split statistics.
        let mean = x.mean(&axes, true)?;
        let centered = x.sub(&mean)?;
        let var = centered.mul(&centered)?.mean(&axes, true)?;
        let norm = centered.mul(&var.add_scalar(1e-5)?.rsqrt()?)?;
        check_with_limits(&format!("normalised {shape:?}"), &norm, &split, Tol::of(DType::F32).ops(8).reduce(n))?;
    }
    // Columns of a transposed view are not contiguous: no split, same values.
    let t = randn(&[64, 8192], 23, DType::F32, &d)?.transpose(0, 1)?;
    check_with_limits("sum over rows of a transposed view", &t.sum(&[0], false)?, &split, Tol::of(DType::F32).reduce(8192))?;
    let u = randint(&[8192, 64], 24, 0, 100, &d)?;
    check_with_limits("integer column sum, split", &u.sum(&[0], false)?, &split, Tol::of(DType::I32))?;
    // No kept positions: nothing to split.
    let e = Tensor::from_vec(Vec::<f32>::new(), [4096, 0, 64], &d)?;
    check_with_limits("sum with an empty kept axis", &e.sum(&[0], false)?, &split, Tol::of(DType::F32))?;
    Ok(())
}

#[test]
fn column_reductions_split_into_two_kernels_under_cuda_limits() -> Result<()> {
    let d = dev!();
    let x = randn(&[32, 16, 16, 64], 25, DType::F32, &d)?;
    let y = randn(&[32, 16, 16, 64], 26, DType::F32, &d)?;
    let s = x.mul(&y)?.sum(&[0, 1, 2], false)?;
    let count = |limits: &Limits| -> Result<usize> {
        Ok(fusegraph_core::runtime::compiled_for(std::slice::from_ref(&s), limits)?.schedule.steps.len())
    };
    assert_eq!(count(&column_split())?, 2, "split: partial sums per chunk, then their combination");
    assert_eq!(count(&Limits::webgpu())?, 1, "targets without the column split keep one kernel");
    // Few rows per column: one kernel's work, no split.
    let short = randn(&[64, 64], 27, DType::F32, &d)?.sum(&[0], false)?;
    let c = fusegraph_core::runtime::compiled_for(std::slice::from_ref(&short), &column_split())?;
    assert_eq!(c.schedule.steps.len(), 1);
    Ok(())
}

// Values that are the same along a row (a stage value, a constant, and ops
// of those such as `1 / (s*s + 1)` or `exp(-max)`) are computed once per row
// on the CPU and read as scalars; integer row values still wrap and cast.
#[test]
fn row_kernels_with_per_row_scalar_subexpressions() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        let x = randn(&[7, 300], 11, dtype, &d)?;
        let s = x.sum(&[1], true)?;
        let m = x.max(&[1], true)?;
        let inv = Tensor::full(1.0, (), dtype, &d)?.div(&s.mul(&s)?.add_scalar(1.0)?)?;
        let y = x.mul(&inv)?.add(&m.neg()?.exp()?)?;
        check_tol(&format!("row scalars {dtype}"), &y, Tol::of(dtype).ops(6).reduce(300))?;
        // A scalar on the left over rows longer than the CPU's 256-element
        // spread buffer: `c - x` and `m / x`.
        let c = Tensor::full(1.5, (), dtype, &d)?;
        check(&format!("scalar minus row {dtype}"), &c.sub(&x)?)?;
        check_tol(&format!("row max over x {dtype}"), &m.div(&x)?, Tol::of(dtype).ops(2))?;
        // The row's argmax (i32) times 3, cast back: an integer scalar.
        let a = x.argmax(Some(1), true)?.mul_scalar(3.0)?.cast(dtype)?;
        check(&format!("argmax row scalar {dtype}"), &x.sub(&a)?)?;
        // A per-row value that is the whole output of the row kernel.
        let only = s.mul_scalar(2.0)?.add_scalar(1.0)?.expand([7, 300])?;
        check_tol(&format!("row scalar as the output {dtype}"), &only.contiguous()?, Tol::of(dtype).ops(2).reduce(300))?;
    }
    Ok(())
}
