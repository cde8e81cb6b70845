// concat, index_select, gather.

#[test]
fn concat_three_parts_along_each_axis() -> Result<()> {
    let d = dev!();
    let a = randn(&[2, 3, 4], 1, DType::F32, &d)?;
    for axis in [0isize, 1, 2, -1] {
        let mut sb = a.shape().to_vec();
        let ax = axis.rem_euclid(3) as usize;
        sb[ax] = 1;
        let b = randn(&sb, 2, DType::F32, &d)?;
        let mut sc = a.shape().to_vec();
        sc[ax] = 5;
        let c = randn(&sc, 3, DType::F32, &d)?;
        let y = Tensor::concat(&[&a, &b, &c], axis)?;
        assert_eq!(y.shape()[ax], a.shape()[ax] + 6);
        check(&format!("concat axis {axis}"), &y)?;
    }
    Ok(())
}

#[test]
fn concat_of_mixed_dtypes_promotes() -> Result<()> {
    let d = dev!();
    let a = Tensor::from_vec(vec![1i32, 2], [2], &d)?;
    let b = leaf(&[0.5, 1.5], &[2], DType::F16, &d)?;
    let c = Tensor::from_vec(vec![true], [1], &d)?;
    let y = Tensor::concat(&[&a, &b, &c], 0)?;
    assert_eq!(y.dtype(), DType::F16);
    assert_eq!(y.to_vec_f64()?, vec![1.0, 2.0, 0.5, 1.5, 1.0]);
    check("concat i32 f16 bool", &y)?;
    let h = leaf(&[1.0], &[1], DType::BF16, &d)?;
    assert_eq!(Tensor::concat(&[&b, &h], 0)?.dtype(), DType::F32);
    Ok(())
}

#[test]
fn concat_of_views_and_lazy_parts() -> Result<()> {
    let d = dev!();
    let a = randn(&[4, 3], 4, DType::F32, &d)?.t()?; // [3, 4], transposed
    let b = randn(&[3, 10], 5, DType::F32, &d)?.narrow(1, 2, 4)?.exp()?; // lazy
    let c = randn(&[1, 4], 6, DType::F32, &d)?.expand([2, 4])?;
    let y = Tensor::concat(&[&a, &b, &c], 0)?;
    assert_eq!(y.shape(), &[8, 4]);
    check("concat of views", &y)?;
    check("concat then relu", &y.relu()?)?;
    Ok(())
}

#[test]
fn index_select_with_negative_and_repeated_indices() -> Result<()> {
    let d = dev!();
    let x = Tensor::arange(0.0, 12.0, 1.0, DType::F32, &d)?.reshape([3, 4])?;
    let idx = Tensor::from_vec(vec![2i32, -1, 0, 0], [4], &d)?;
    let rows = x.index_select(0, &idx)?;
    assert_eq!(rows.shape(), &[4, 4]);
    assert_eq!(rows.to_vec::<f32>()?, vec![8.0, 9.0, 10.0, 11.0, 8.0, 9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0]);
    let cols = x.index_select(-1, &Tensor::from_vec(vec![3u8, 1], [2], &d)?)?;
    assert_eq!(cols.to_vec::<f32>()?, vec![3.0, 1.0, 7.0, 5.0, 11.0, 9.0]);
    check("index_select rows", &rows)?;
    check("index_select cols of transposed", &x.t()?.index_select(1, &idx)?)?;
    let h = randn(&[5, 6], 7, DType::BF16, &d)?;
    check("index_select bf16", &h.index_select(1, &randint(&[9], 8, -6, 6, &d)?)?)?;
    Ok(())
}

#[test]
fn gather_along_each_axis_with_negative_indices() -> Result<()> {
    let d = dev!();
    let x = Tensor::arange(0.0, 6.0, 1.0, wide(&d), &d)?.reshape([2, 3])?;
    let idx = Tensor::from_vec(vec![2i32, 0, -3, -1], [2, 2], &d)?;
    let g = x.gather(1, &idx)?;
    assert_eq!(g.to_vec_f64()?, vec![2.0, 0.0, 3.0, 5.0]);
    let g0 = x.gather(0, &Tensor::from_vec(vec![1i32, 0, 1], [1, 3], &d)?)?;
    assert_eq!(g0.to_vec_f64()?, vec![3.0, 1.0, 5.0]);
    check("gather axis 1", &g)?;
    let src = randn(&[4, 5, 6], 9, DType::F32, &d)?;
    let ix = randint(&[4, 3, 6], 10, -5, 5, &d)?;
    check("gather 3-d axis 1", &src.gather(1, &ix)?)?;
    Ok(())
}

#[test]
fn out_of_range_index_is_an_error_not_a_panic() -> Result<()> {
    let d = dev!();
    let x = randn(&[3, 4], 11, DType::F32, &d)?;
    for bad in [3i32, -4, 100, i32::MIN] {
        let idx = Tensor::from_vec(vec![0i32, bad], [2], &d)?;
        let r = x.index_select(0, &idx)?.to_vec::<f32>();
        match r {
            Err(Error::IndexOutOfRange { op, index, axis, size }) => {
                assert_eq!((op, index, axis, size), ("index_select", bad as i64, 0, 3));
            }
            other => panic!("index_select with {bad}: expected IndexOutOfRange, got {other:?}"),
        }
        let gi = Tensor::from_vec(vec![0i32, bad, 1], [1, 3], &d)?;
        let r = x.gather(0, &gi)?.to_vec::<f32>();
        assert!(matches!(r, Err(Error::IndexOutOfRange { op: "gather", .. })), "gather with {bad}: {r:?}");
        // The reference agrees.
        assert!(matches!(reference::evaluate(&x.index_select(0, &idx)?), Err(Error::IndexOutOfRange { .. })));
    }
    let msg = x.index_select(1, &Tensor::from_vec(vec![7i32], [1], &d)?)?.realize().unwrap_err().to_string();
    assert!(msg.contains("index_select") && msg.contains('7') && msg.contains("size 4"), "{msg}");
    // A failed realization leaves the tensor usable for a correct one.
    assert!(x.index_select(0, &Tensor::from_vec(vec![2i32], [1], &d)?)?.realize().is_ok());
    Ok(())
}

#[test]
fn index_dtype_and_shape_are_checked() -> Result<()> {
    let d = dev!();
    let x = randn(&[3, 4], 12, DType::F32, &d)?;
    let f = leaf(&[0.0], &[1], DType::F32, &d)?;
    assert!(matches!(x.index_select(0, &f), Err(Error::IndexDType { op: "index_select", dtype: DType::F32 })));
    let two_d = Tensor::from_vec(vec![0i32; 4], [2, 2], &d)?;
    assert!(matches!(x.index_select(0, &two_d), Err(Error::GatherShape { .. })));
    let too_wide = Tensor::from_vec(vec![0i32; 10], [2, 5], &d)?;
    assert!(matches!(x.gather(0, &too_wide), Err(Error::GatherShape { .. })));
    Ok(())
}
