// Cholesky, QR and SVD against independent f64 algorithms written here
// (textbook Cholesky, modified Gram-Schmidt, one-sided Jacobi), never the
// library's own code. Factorizations are compared through what defines them
// (reconstruction, orthogonality, triangularity) and through their unique
// parts (L; Q and R with diag(R) > 0; the singular values).
//
// Tolerances follow the backward-error bounds of these algorithms: a
// Householder/LLᵀ/SVD result in precision ε reproduces A to within
// c·k·ε·‖A‖ (k = the larger dimension), and Weyl's theorem bounds each
// singular value by the same amount. We take c = 8 and ‖A‖ as the largest
// singular value, stated once in `decomp_tol`. The unique factors (L, Q, R)
// are held to the same bound: the test matrices are well conditioned
// (random Gaussian, or B·Bᵀ + n·I), so forward and backward errors agree
// to within a small factor.

fn decomp_eps(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON,
        _ => f32::EPSILON as f64,
    }
}

/// The absolute tolerance for one m×n factorization of a matrix of norm `norm`.
fn decomp_tol(dtype: DType, m: usize, n: usize, norm: f64) -> f64 {
    8.0 * m.max(n) as f64 * decomp_eps(dtype) * norm.max(1.0)
}

/// Row-major f64 values of `t`.
fn host(t: &Tensor) -> Result<Vec<f64>> {
    t.to_vec_f64()
}

/// C = A·B for row-major A (m×k) and B (k×n), in f64.
fn mat_mul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let aip = a[i * k + p];
            for j in 0..n {
                c[i * n + j] += aip * b[p * n + j];
            }
        }
    }
    c
}

fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    (0..n * m).map(|x| a[(x % m) * n + x / m]).collect()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// Textbook Cholesky–Banachiewicz in f64.
fn ref_cholesky(a: &[f64], n: usize) -> Vec<f64> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|p| l[i * n + p] * l[j * n + p]).sum();
            l[i * n + j] = if i == j {
                (a[i * n + i] - s).sqrt()
            } else {
                (a[i * n + j] - s) / l[j * n + j]
            };
        }
    }
    l
}

/// Thin QR by modified Gram-Schmidt in f64 (twice, for orthogonality), with
/// diag(R) > 0 — the unique QR of a full-rank matrix.
fn ref_qr(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let mut q = vec![0.0; m * k];
    let mut r = vec![0.0; k * n];
    let col = |x: &[f64], j: usize, rows: usize, cols: usize| -> Vec<f64> { (0..rows).map(|i| x[i * cols + j]).collect() };
    for j in 0..n {
        let mut v = col(a, j, m, n);
        for _pass in 0..2 {
            for p in 0..j.min(k) {
                let qp = col(&q, p, m, k);
                let d: f64 = qp.iter().zip(&v).map(|(x, y)| x * y).sum();
                r[p * n + j] += d;
                v.iter_mut().zip(&qp).for_each(|(vi, qi)| *vi -= d * qi);
            }
        }
        if j < k {
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            r[j * n + j] = norm;
            for i in 0..m {
                q[i * k + j] = v[i] / norm;
            }
        }
    }
    (q, r)
}

/// Singular values, descending, by one-sided Jacobi rotations in f64.
fn ref_singular_values(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    // Work on the columns of the taller orientation.
    let (rows, cols, mut w) = if m >= n { (m, n, a.to_vec()) } else { (n, m, transpose(a, m, n)) };
    for _sweep in 0..60 {
        let mut off = 0.0f64;
        for p in 0..cols {
            for q in p + 1..cols {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for i in 0..rows {
                    let (x, y) = (w[i * cols + p], w[i * cols + q]);
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if gamma == 0.0 {
                    continue;
                }
                off = off.max(gamma.abs() / (alpha * beta).sqrt());
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let t = if zeta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for i in 0..rows {
                    let (x, y) = (w[i * cols + p], w[i * cols + q]);
                    w[i * cols + p] = c * x - s * y;
                    w[i * cols + q] = s * x + c * y;
                }
            }
        }
        if off < 1e-15 {
            break;
        }
    }
    let mut s: Vec<f64> = (0..cols)
        .map(|j| (0..rows).map(|i| w[i * cols + j].powi(2)).sum::<f64>().sqrt())
        .collect();
    s.sort_by(|a, b| b.total_cmp(a));
    s
}

/// ‖QᵀQ − I‖_max for row-major Q (m×k).
fn orthogonality_error(q: &[f64], m: usize, k: usize) -> f64 {
    let qtq = mat_mul(&transpose(q, m, k), q, k, m, k);
    (0..k * k)
        .map(|x| (qtq[x] - if x / k == x % k { 1.0 } else { 0.0 }).abs())
        .fold(0.0, f64::max)
}

/// A random symmetric positive-definite n×n matrix B·Bᵀ + n·I, in f64.
fn spd(n: usize, seed: u64) -> Result<Vec<f64>> {
    let b = host(&randn(&[n, n], seed, DType::F64, &Device::Cpu)?)?;
    let mut a = mat_mul(&b, &transpose(&b, n, n), n, n, n);
    for i in 0..n {
        a[i * n + i] += n as f64;
    }
    Ok(a)
}

fn decomp_dtypes(d: &Device) -> Vec<DType> {
    supported(d, &[DType::F64, DType::F32])
}

#[test]
fn cholesky_matches_the_textbook_factor_and_reconstructs() -> Result<()> {
    let d = dev!();
    for dtype in decomp_dtypes(&d) {
        for n in [1, 2, 7, 33, 64] {
            let a = spd(n, n as u64)?;
            let t = leaf(&a, &[n, n], dtype, &d)?;
            let a_in = host(&t)?; // A as rounded to dtype
            let l = host(&t.cholesky()?)?;
            let norm = ref_singular_values(&a_in, n, n)[0];
            let tol = decomp_tol(dtype, n, n, norm);
            for i in 0..n {
                for j in i + 1..n {
                    assert_eq!(l[i * n + j], 0.0, "cholesky {dtype} {n}: L[{i},{j}] above the diagonal");
                }
            }
            let llt = mat_mul(&l, &transpose(&l, n, n), n, n, n);
            let e = max_abs_diff(&llt, &a_in);
            assert!(e <= tol, "cholesky {dtype} {n}x{n}: |LLᵀ - A| = {e:e} > {tol:e}");
            let e = max_abs_diff(&l, &ref_cholesky(&a_in, n));
            assert!(e <= tol, "cholesky {dtype} {n}x{n}: |L - L_ref| = {e:e} > {tol:e}");
        }
    }
    Ok(())
}

#[test]
fn qr_of_tall_square_and_wide_matrices() -> Result<()> {
    let d = dev!();
    for dtype in decomp_dtypes(&d) {
        for (m, n) in [(1, 1), (7, 3), (3, 7), (33, 33), (64, 40)] {
            let t = randn(&[m, n], (m * 100 + n) as u64, dtype, &d)?;
            let a = host(&t)?;
            let (q, r) = t.qr()?;
            let k = m.min(n);
            assert_eq!((q.shape(), r.shape()), (&[m, k][..], &[k, n][..]));
            let (q, r) = (host(&q)?, host(&r)?);
            let norm = ref_singular_values(&a, m, n)[0];
            let tol = decomp_tol(dtype, m, n, norm);
            for i in 0..k {
                for j in 0..i.min(n) {
                    assert_eq!(r[i * n + j], 0.0, "qr {dtype} {m}x{n}: R[{i},{j}] below the diagonal");
                }
            }
            let e = max_abs_diff(&mat_mul(&q, &r, m, k, n), &a);
            assert!(e <= tol, "qr {dtype} {m}x{n}: |QR - A| = {e:e} > {tol:e}");
            let e = orthogonality_error(&q, m, k);
            let otol = decomp_tol(dtype, m, n, 1.0);
            assert!(e <= otol, "qr {dtype} {m}x{n}: |QᵀQ - I| = {e:e} > {otol:e}");
            // The unique factor: flip signs so diag(R) > 0, then compare.
            let (q_ref, r_ref) = ref_qr(&a, m, n);
            let (mut q_pos, mut r_pos) = (q.clone(), r.clone());
            for i in 0..k {
                if r[i * n + i] < 0.0 {
                    (0..n).for_each(|j| r_pos[i * n + j] = -r[i * n + j]);
                    (0..m).for_each(|row| q_pos[row * k + i] = -q[row * k + i]);
                }
            }
            let e = max_abs_diff(&r_pos, &r_ref);
            assert!(e <= tol, "qr {dtype} {m}x{n}: |R - R_ref| = {e:e} > {tol:e}");
            let e = max_abs_diff(&q_pos, &q_ref);
            assert!(e <= tol, "qr {dtype} {m}x{n}: |Q - Q_ref| = {e:e} > {tol:e}");
        }
    }
    Ok(())
}

#[test]
fn svd_singular_values_match_jacobi_and_factors_reconstruct() -> Result<()> {
    let d = dev!();
    for dtype in decomp_dtypes(&d) {
        for (m, n) in [(1, 1), (1, 5), (6, 2), (3, 7), (33, 33), (64, 40)] {
            let t = randn(&[m, n], (m * 1000 + n) as u64, dtype, &d)?;
            let a = host(&t)?;
            let (u, s, vt) = t.svd()?;
            let k = m.min(n);
            assert_eq!((u.shape(), s.shape(), vt.shape()), (&[m, k][..], &[k][..], &[k, n][..]));
            let (u, s, vt) = (host(&u)?, host(&s)?, host(&vt)?);
            let s_ref = ref_singular_values(&a, m, n);
            let tol = decomp_tol(dtype, m, n, s_ref[0]);
            assert!(s.windows(2).all(|w| w[0] >= w[1]), "svd {dtype} {m}x{n}: S not descending: {s:?}");
            assert!(s.iter().all(|&x| x >= 0.0), "svd {dtype} {m}x{n}: negative S: {s:?}");
            let e = max_abs_diff(&s, &s_ref[..k]);
            assert!(e <= tol, "svd {dtype} {m}x{n}: |S - S_ref| = {e:e} > {tol:e}");
            let us: Vec<f64> = (0..m * k).map(|x| u[x] * s[x % k]).collect();
            let e = max_abs_diff(&mat_mul(&us, &vt, m, k, n), &a);
            assert!(e <= tol, "svd {dtype} {m}x{n}: |U S Vᵀ - A| = {e:e} > {tol:e}");
            let otol = decomp_tol(dtype, m, n, 1.0);
            let e = orthogonality_error(&u, m, k).max(orthogonality_error(&transpose(&vt, k, n), n, k));
            assert!(e <= otol, "svd {dtype} {m}x{n}: U or V not orthonormal by {e:e} > {otol:e}");
        }
    }
    Ok(())
}

#[test]
fn decompositions_of_batches_and_strided_views() -> Result<()> {
    let d = dev!();
    let dtype = wide(&d);
    // [2, 3] batch of 5×4 matrices, taken as a transposed view of [2, 3, 4, 5].
    let base = randn(&[2, 3, 4, 5], 77, dtype, &d)?;
    let view = base.transpose(2, 3)?;
    let (q, r) = view.qr()?;
    let (u, s, vt) = view.svd()?;
    assert_eq!((q.shape(), r.shape()), (&[2, 3, 5, 4][..], &[2, 3, 4, 4][..]));
    assert_eq!((u.shape(), s.shape(), vt.shape()), (&[2, 3, 5, 4][..], &[2, 3, 4][..], &[2, 3, 4, 4][..]));
    let a = host(&view)?;
    let (q, r, s) = (host(&q)?, host(&r)?, host(&s)?);
    for b in 0..6 {
        let ab = &a[b * 20..(b + 1) * 20];
        let s_ref = ref_singular_values(ab, 5, 4);
        let tol = decomp_tol(dtype, 5, 4, s_ref[0]);
        let qr = mat_mul(&q[b * 20..(b + 1) * 20], &r[b * 16..(b + 1) * 16], 5, 4, 4);
        let e = max_abs_diff(&qr, ab);
        assert!(e <= tol, "batched qr, matrix {b}: |QR - A| = {e:e} > {tol:e}");
        let e = max_abs_diff(&s[b * 4..(b + 1) * 4], &s_ref);
        assert!(e <= tol, "batched svd, matrix {b}: |S - S_ref| = {e:e} > {tol:e}");
    }
    // A batch of SPD matrices through cholesky.
    let mut values = spd(6, 1)?;
    values.extend(spd(6, 2)?);
    let l = host(&leaf(&values, &[2, 6, 6], dtype, &d)?.cholesky()?)?;
    for b in 0..2 {
        let a_in = &values[b * 36..(b + 1) * 36];
        let llt = mat_mul(&l[b * 36..(b + 1) * 36], &transpose(&l[b * 36..(b + 1) * 36], 6, 6), 6, 6, 6);
        let tol = decomp_tol(dtype, 6, 6, ref_singular_values(a_in, 6, 6)[0]);
        let e = max_abs_diff(&llt, a_in);
        assert!(e <= tol, "batched cholesky, matrix {b}: |LLᵀ - A| = {e:e} > {tol:e}");
    }
    Ok(())
}

#[test]
fn decomposition_errors_name_the_op_and_shape() -> Result<()> {
    let d = dev!();
    let dtype = wide(&d);
    let v = Tensor::zeros([4], dtype, &d)?;
    assert!(matches!(v.svd(), Err(Error::RankTooLow { op: "svd", .. })));
    assert!(matches!(v.qr(), Err(Error::RankTooLow { op: "qr", .. })));
    let e = Tensor::zeros([3, 4], dtype, &d)?.cholesky().unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "cholesky", .. }), "{e:?}");
    assert!(e.to_string().contains("[3, 4]"), "{e}");
    // The second matrix of the batch is indefinite.
    let mut values = spd(3, 5)?;
    values.extend([1.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    let e = leaf(&values, &[2, 3, 3], dtype, &d)?.cholesky().unwrap_err();
    assert_eq!(e, Error::NotPositiveDefinite { op: "cholesky", shape: vec![3, 3], batch_index: 1 });
    assert!(e.to_string().contains("matrix 1 of the batch"), "{e}");
    for bad in [DType::F16, DType::I32] {
        let t = Tensor::zeros([2, 2], bad, &d)?;
        for r in [t.cholesky().map(|_| ()), t.qr().map(|_| ()), t.svd().map(|_| ())] {
            assert!(matches!(r, Err(Error::UnsupportedDType { dtype, .. }) if dtype == bad), "{bad}: {r:?}");
        }
    }
    Ok(())
}
