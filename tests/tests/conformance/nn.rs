// Softmax, log-softmax and layer norm.

#[test]
fn softmax_and_log_softmax_over_last_axis_and_axis_0() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        let x = randn(&[9, 31], 1, dtype, &d)?;
        for axis in [-1isize, 0, 1] {
            let n = x.shape()[axis.rem_euclid(2) as usize];
            let s = x.softmax(axis)?;
            check_tol(&format!("softmax {dtype} axis {axis}"), &s, Tol::of(dtype).ops(4).reduce(n))?;
            let l = x.log_softmax(axis)?;
            check_tol(&format!("log_softmax {dtype} axis {axis}"), &l, Tol::of(dtype).ops(5).reduce(n))?;
        }
        // Rows sum to 1.
        let rows = x.softmax(-1)?.cast(wide(&d))?.sum(&[-1], false)?.to_vec_f64()?;
        let tol = 31.0 * Tol::of(dtype).tol;
        assert!(rows.iter().all(|r| (r - 1.0).abs() < tol), "{dtype}: {rows:?}");
    }
    Ok(())
}

#[test]
fn softmax_of_large_values_does_not_overflow() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &[DType::F32, DType::F64, DType::F16, DType::BF16]) {
        let big = if dtype == DType::F16 { 60000.0 } else { 1e30_f64.min(if dtype == DType::F64 { 1e300 } else { 3e38 }) };
        let x = leaf(&[big, big - 1.0, 0.0, -big, 1000.0, 999.0, 998.0, -5.0], &[2, 4], dtype, &d)?;
        let s = x.softmax(-1)?.to_vec_f64()?;
        assert!(s.iter().all(|v| v.is_finite()), "softmax {dtype}: {s:?}");
        let l = x.log_softmax(-1)?.to_vec_f64()?;
        assert!(l[0].abs() < 1.0 && l[4].is_finite(), "log_softmax {dtype}: {l:?}");
        check_tol(&format!("softmax large {dtype}"), &x.softmax(-1)?, Tol::of(dtype).ops(4))?;
        check_tol(&format!("log_softmax large {dtype}"), &x.log_softmax(1)?, Tol::of(dtype).ops(5))?;
    }
    Ok(())
}

#[test]
fn softmax_of_rows_longer_than_a_chunk_and_of_a_transposed_input() -> Result<()> {
    let d = dev!();
    let x = randn(&[3, 5000], 2, DType::F32, &d)?;
    check_tol("softmax 5000", &x.softmax(-1)?, Tol::of(DType::F32).ops(4).reduce(5000))?;
    let t = randn(&[40, 12], 3, DType::F32, &d)?.t()?;
    check_tol("softmax of transposed", &t.softmax(-1)?, Tol::of(DType::F32).ops(4).reduce(40))?;
    check_tol("log_softmax of int", &randint(&[4, 6], 4, -5, 5, &d)?.log_softmax(-1)?, Tol::of(DType::F32).ops(5))?;
    Ok(())
}

#[test]
fn softmax_of_strided_row_views_and_of_rows_with_nan_and_infinities() -> Result<()> {
    let d = dev!();
    // Rows that are contiguous inside a larger storage: an offset and an
    // outer stride wider than the row, and outer axes permuted.
    let x = randn(&[6, 40], 8, DType::F32, &d)?;
    let narrowed = x.narrow(1, 3, 29)?;
    check_tol("softmax of narrowed rows", &narrowed.softmax(-1)?, Tol::of(DType::F32).ops(4).reduce(29))?;
    let cube = randn(&[3, 4, 5, 17], 9, DType::F32, &d)?.permute(&[2, 0, 1, 3])?;
    check_tol("softmax of permuted outer axes", &cube.softmax(-1)?, Tol::of(DType::F32).ops(4).reduce(17))?;
    // Row by row: a NaN, a -inf among finite values, all -inf, a +inf, and
    // values whose exponentials fall below f32's normal range.
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let rows: Vec<f32> = [
        [0.5, nan, 1.0, 2.0, -1.0, 0.0, 3.0, 1.5, 0.25],
        [0.5, -inf, 1.0, 2.0, -1.0, 0.0, 3.0, 1.5, 0.25],
        [-inf; 9],
        [0.5, inf, 1.0, 2.0, -1.0, 0.0, 3.0, 1.5, 0.25],
        [0.0, -86.0, -87.3, -87.5, -90.0, -104.0, -200.0, -1e30, 1.0],
    ]
    .concat();
    let t = Tensor::from_vec(rows, [5, 9], &d)?;
    check_tol("softmax of non-finite rows", &t.softmax(-1)?, Tol::of(DType::F32).ops(4).reduce(9))?;
    Ok(())
}

#[test]
fn layer_norm_with_and_without_weight_and_bias_over_one_and_two_dims() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        let x = randn(&[4, 6, 10], 5, dtype, &d)?;
        for dims in [1usize, 2] {
            let tail: Vec<usize> = x.shape()[3 - dims..].to_vec();
            let n: usize = tail.iter().product();
            let w = randn(&tail, 6, dtype, &d)?;
            let b = randn(&tail, 7, dtype, &d)?;
            for (what, y) in [
                ("plain", x.layer_norm(dims, None, None, 1e-5)?),
                ("weight", x.layer_norm(dims, Some(&w), None, 1e-5)?),
                ("bias", x.layer_norm(dims, None, Some(&b), 1e-5)?),
                ("weight+bias", x.layer_norm(dims, Some(&w), Some(&b), 1e-5)?),
            ] {
                assert_eq!(y.shape(), x.shape());
                // mean, sub, square, mean, add eps, rsqrt, mul, weight, bias
                check_tol(&format!("layer_norm {what} {dtype} dims {dims}"), &y, Tol::of(dtype).ops(9).reduce(n))?;
            }
        }
    }
    // Normalised rows have mean 0 and variance 1.
    // In the widest dtype of the device, to its base tolerance (1e-12 for f64).
    let tol = Tol::of(wide(&d)).tol;
    let y = randn(&[3, 64], 8, wide(&d), &d)?.layer_norm(1, None, None, 0.0)?;
    for m in y.mean(&[-1], false)?.to_vec_f64()? {
        assert!(m.abs() < tol, "mean {m}");
    }
    for v in y.var(&[-1], 0, false)?.to_vec_f64()? {
        assert!((v - 1.0).abs() < tol, "var {v}");
    }
    Ok(())
}

#[test]
fn layer_norm_of_a_constant_row_uses_eps() -> Result<()> {
    let d = dev!();
    let x = Tensor::full(3.0, [2, 8], DType::F32, &d)?;
    let y = x.layer_norm(1, None, None, 1e-5)?.to_vec::<f32>()?;
    assert!(y.iter().all(|&v| v == 0.0), "{y:?}");
    Ok(())
}
