// Matrix products: NumPy matmul rules, strided operands, every dtype.

fn mm_tol(dtype: DType, k: usize) -> Tol {
    Tol::of(dtype).reduce(k)
}

#[test]
fn matmul_2d_on_every_float_dtype() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        for (m, k, n) in [(1, 1, 1), (7, 13, 5), (64, 48, 33), (3, 200, 2)] {
            let a = randn(&[m, k], 1, dtype, &d)?;
            let b = randn(&[k, n], 2, dtype, &d)?;
            let y = a.matmul(&b)?;
            assert_eq!((y.shape(), y.dtype()), (&[m, n][..], dtype));
            check_tol(&format!("matmul {dtype} {m}x{k}x{n}"), &y, mm_tol(dtype, k))?;
        }
    }
    Ok(())
}

#[test]
fn matmul_i32_is_exact_and_wraps() -> Result<()> {
    let d = dev!();
    let a = randint(&[7, 13], 1, -20, 20, &d)?;
    let b = randint(&[13, 5], 2, -20, 20, &d)?;
    let y = a.matmul(&b)?;
    assert_eq!(y.dtype(), DType::I32);
    check("matmul i32", &y)?;
    let big = Tensor::from_vec(vec![65536i32, 65536], [1, 2], &d)?;
    let col = Tensor::from_vec(vec![65536i32, 1], [2, 1], &d)?;
    assert_eq!(big.matmul(&col)?.to_vec::<i32>()?, vec![65536], "2^32 wraps to 0, plus 2^16");
    check("matmul i32 of transposed", &a.t()?.t()?.matmul(&b.t()?.t()?)?)?;
    Ok(())
}

#[test]
fn matmul_promotes_1d_operands() -> Result<()> {
    let d = dev!();
    let v = randn(&[13], 3, DType::F32, &d)?;
    let m = randn(&[13, 5], 4, DType::F32, &d)?;
    let w = randn(&[7, 13], 5, DType::F32, &d)?;
    let vm = v.matmul(&m)?;
    assert_eq!(vm.shape(), &[5]);
    check_tol("[13] @ [13,5]", &vm, mm_tol(DType::F32, 13))?;
    let wv = w.matmul(&v)?;
    assert_eq!(wv.shape(), &[7]);
    check_tol("[7,13] @ [13]", &wv, mm_tol(DType::F32, 13))?;
    let dot = v.matmul(&v)?;
    assert_eq!(dot.shape(), &[] as &[usize]);
    check_tol("[13] @ [13]", &dot, mm_tol(DType::F32, 13))?;
    let bv = randn(&[4, 7, 13], 6, DType::F32, &d)?.matmul(&v)?;
    assert_eq!(bv.shape(), &[4, 7]);
    check_tol("[4,7,13] @ [13]", &bv, mm_tol(DType::F32, 13))?;
    let vb = v.matmul(&randn(&[2, 13, 3], 7, DType::F32, &d)?)?;
    assert_eq!(vb.shape(), &[2, 3]);
    check_tol("[13] @ [2,13,3]", &vb, mm_tol(DType::F32, 13))?;
    Ok(())
}

#[test]
fn matmul_batched_with_broadcast_batch_dims() -> Result<()> {
    let d = dev!();
    let a = randn(&[2, 1, 3, 4], 8, wide(&d), &d)?;
    let b = randn(&[5, 4, 6], 9, wide(&d), &d)?;
    let y = a.matmul(&b)?;
    assert_eq!(y.shape(), &[2, 5, 3, 6]);
    check_tol("[2,1,3,4] @ [5,4,6]", &y, mm_tol(wide(&d), 4))?;
    let c = randn(&[3, 4], 10, DType::F32, &d)?;
    let e = randn(&[8, 4, 2], 11, DType::F32, &d)?;
    let z = c.matmul(&e)?;
    assert_eq!(z.shape(), &[8, 3, 2]);
    check_tol("[3,4] @ [8,4,2]", &z, mm_tol(DType::F32, 4))?;
    // Many batches (more than threads) of f16.
    let p = randn(&[16, 9, 17], 12, DType::F16, &d)?;
    let q = randn(&[16, 17, 10], 13, DType::F16, &d)?;
    check_tol("batched f16", &p.matmul(&q)?, mm_tol(DType::F16, 17))?;
    Ok(())
}

#[test]
fn matmul_of_transposed_views_makes_no_copy() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &[DType::F32, DType::F64, DType::BF16]) {
        let a = randn(&[13, 7], 14, dtype, &d)?; // used as a.T: [7, 13]
        let b = randn(&[5, 13], 15, dtype, &d)?; // used as b.T: [13, 5]
        let bn = randn(&[13, 5], 16, dtype, &d)?;
        let an = randn(&[7, 13], 17, dtype, &d)?;
        let (at, bt) = (a.t()?, b.t()?);
        assert!(!at.is_contiguous() && !bt.is_contiguous(), "t() is a view");
        for (what, y) in [("a.T @ b", at.matmul(&bn)?), ("a @ b.T", an.matmul(&bt)?), ("a.T @ b.T", at.matmul(&bt)?)] {
            assert_eq!(y.shape(), &[7, 5]);
            // One kernel: the transposed operand is read through its strides, no copy kernel.
            assert_eq!(kernels(&y)?, 1, "{what} {dtype}");
            check_tol(&format!("{what} {dtype}"), &y, mm_tol(dtype, 13))?;
        }
    }
    // x @ x.T reads one storage twice.
    let x = randn(&[6, 9], 18, DType::F32, &d)?;
    let g = x.matmul(&x.t()?)?;
    assert_eq!(kernels(&g)?, 1);
    check_tol("x @ x.T", &g, mm_tol(DType::F32, 9))?;
    // Batched transpose of the last two axes and a narrowed operand.
    let bt = randn(&[3, 4, 5], 19, DType::F32, &d)?.t()?;
    let an = randn(&[3, 6, 10], 20, DType::F32, &d)?.narrow(2, 3, 5)?;
    check_tol("narrowed @ batched transposed", &an.matmul(&bt)?, mm_tol(DType::F32, 5))?;
    Ok(())
}

#[test]
fn matmul_with_zero_inner_dimension_is_zeros() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &[DType::F32, DType::F64, DType::I32]) {
        let a = Tensor::zeros([3, 0], dtype, &d)?;
        let b = Tensor::zeros([0, 4], dtype, &d)?;
        let y = a.matmul(&b)?.add_scalar(0.0)?;
        assert_eq!(y.shape(), &[3, 4]);
        assert_eq!(y.to_vec_f64()?, vec![0.0; 12], "{dtype}");
        // A realized non-zero buffer must not leak into the product.
        let r = a.matmul(&b)?;
        assert_eq!(r.to_vec_f64()?, vec![0.0; 12], "{dtype}");
    }
    let e = Tensor::zeros([0, 5], DType::F32, &d)?.matmul(&randn(&[5, 2], 21, DType::F32, &d)?)?;
    assert_eq!(e.shape(), &[0, 2]);
    assert!(e.to_vec::<f32>()?.is_empty());
    Ok(())
}

#[test]
fn matmul_of_mixed_dtypes_promotes() -> Result<()> {
    let d = dev!();
    let a = randn(&[4, 6], 22, DType::F16, &d)?;
    let b = randn(&[6, 3], 23, DType::BF16, &d)?;
    let y = a.matmul(&b)?;
    assert_eq!(y.dtype(), DType::F32);
    check_tol("f16 @ bf16", &y, mm_tol(DType::F32, 6))?;
    let i = randint(&[6, 3], 3, -3, 3, &d)?;
    assert_eq!(a.matmul(&i)?.dtype(), DType::F16);
    check_tol("f16 @ i32", &a.matmul(&i)?, mm_tol(DType::F16, 6))?;
    Ok(())
}

#[test]
fn matmul_of_a_tensor_with_its_own_transpose() -> Result<()> {
    // One storage bound as both operands (a Gram matrix): the kernel still
    // gets two argument slots and reads the transpose through strides.
    let d = dev!();
    let x = randn(&[12, 20], 24, DType::F32, &d)?;
    check_tol("x @ x.t()", &x.matmul(&x.t()?)?, mm_tol(DType::F32, 20))?;
    check_tol("x.t() @ x + 1, relu", &x.t()?.matmul(&x)?.add_scalar(1.0)?.relu()?, mm_tol(DType::F32, 12))?;
    Ok(())
}
