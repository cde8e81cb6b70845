// Every user mistake is a documented Error naming the op and the shapes.

use proptest::prelude::*;

#[test]
fn broadcast_error_names_op_and_shapes() -> Result<()> {
    let d = dev!();
    let a = Tensor::zeros([3, 4], DType::F32, &d)?;
    let b = Tensor::zeros([5], DType::F32, &d)?;
    let e = a.add(&b).unwrap_err();
    assert_eq!(e, Error::Broadcast { op: "add", lhs: vec![3, 4], rhs: vec![5] });
    assert_eq!(e.to_string(), "add: cannot broadcast [3, 4] with [5]");
    assert!(matches!(a.mul(&b), Err(Error::Broadcast { op: "mul", .. })));
    assert!(matches!(Tensor::where_cond(&a, &a, &b), Err(Error::Broadcast { op: "where", .. })));
    let e = a.expand([3, 8]).unwrap_err();
    assert!(matches!(e, Error::Expand { .. }), "{e:?}");
    Ok(())
}

#[test]
fn matmul_inner_dimension_error_names_both_shapes() -> Result<()> {
    let d = dev!();
    let a = Tensor::zeros([2, 3], DType::F32, &d)?;
    let b = Tensor::zeros([4, 5], DType::F32, &d)?;
    let e = a.matmul(&b).unwrap_err();
    assert_eq!(e, Error::MatmulShape { op: "matmul", lhs: vec![2, 3], rhs: vec![4, 5] });
    assert!(e.to_string().contains("[2, 3] @ [4, 5]"), "{e}");
    let s = Tensor::scalar(1.0, DType::F32, &d)?;
    assert!(matches!(s.matmul(&a), Err(Error::RankTooLow { op: "matmul", .. })));
    let batch = Tensor::zeros([2, 3, 3], DType::F32, &d)?.matmul(&Tensor::zeros([4, 3, 3], DType::F32, &d)?);
    assert!(matches!(batch, Err(Error::Broadcast { op: "matmul", .. })), "{batch:?}");
    let u = Tensor::zeros([2, 2], DType::U8, &d)?;
    assert!(matches!(u.matmul(&u), Err(Error::UnsupportedDType { op: "matmul", .. })));
    Ok(())
}

#[test]
fn bad_permutation_and_axis_out_of_range_errors() -> Result<()> {
    let d = dev!();
    let x = Tensor::zeros([2, 3, 4], DType::F32, &d)?;
    for axes in [&[0usize, 1][..], &[0, 1, 1], &[0, 1, 3], &[0, 1, 2, 3]] {
        let e = x.permute(axes).unwrap_err();
        assert!(matches!(e, Error::BadPermutation { op: "permute", rank: 3, .. }), "{axes:?}: {e:?}");
        assert!(e.to_string().contains("[2, 3, 4]"), "{e}");
    }
    let e = x.sum(&[3], false).unwrap_err();
    assert_eq!(e, Error::AxisOutOfRange { op: "sum", axis: 3, rank: 3, shape: vec![2, 3, 4] });
    assert!(matches!(x.max(&[-4], false), Err(Error::AxisOutOfRange { op: "max", .. })));
    assert!(matches!(x.softmax(5), Err(Error::AxisOutOfRange { op: "softmax", .. })));
    assert!(matches!(x.transpose(0, 7), Err(Error::AxisOutOfRange { .. })));
    assert!(matches!(x.argmax(Some(3), false), Err(Error::AxisOutOfRange { op: "argmax", .. })));
    assert!(matches!(x.squeeze(0), Err(Error::SqueezeNotOne { .. })));
    assert!(matches!(x.unsqueeze(5), Err(Error::AxisOutOfRange { op: "unsqueeze", .. })));
    assert!(matches!(Tensor::concat(&[&x], 3), Err(Error::AxisOutOfRange { op: "concat", .. })));
    assert!(matches!(x.sum(&[1, -2], false), Err(Error::DuplicateAxis { op: "sum", .. })));
    Ok(())
}

#[test]
fn dtype_mismatch_in_to_vec_is_an_element_type_error() -> Result<()> {
    let d = dev!();
    let x = Tensor::zeros([2], DType::F32, &d)?;
    let e = x.to_vec::<f64>().unwrap_err();
    assert_eq!(e, Error::ElementType { op: "to_vec", requested: DType::F64, actual: DType::F32 });
    assert!(matches!(x.item::<i32>(), Err(Error::NotScalar { .. }) | Err(Error::ElementType { .. })));
    assert!(matches!(x.sum(&[], false)?.item::<i32>(), Err(Error::ElementType { .. })));
    assert!(matches!(x.clone().into_ndarray::<u8>(), Err(Error::ElementType { op: "into_ndarray", .. })));
    assert!(matches!(x.item::<f32>(), Err(Error::NotScalar { op: "item", .. })));
    Ok(())
}

#[test]
fn reshape_element_count_error() -> Result<()> {
    let d = dev!();
    let x = Tensor::zeros([2, 3], DType::F32, &d)?;
    let e = x.reshape([4, 2]).unwrap_err();
    assert!(matches!(e, Error::Reshape { op: "reshape", from_elems: 6, to_elems: 8, .. }), "{e:?}");
    assert!(e.to_string().contains("[2, 3]") && e.to_string().contains("[4, 2]"), "{e}");
    assert!(matches!(x.reshape([usize::MAX, 4]), Err(Error::Reshape { .. })));
    assert!(matches!(x.reshape([usize::MAX, usize::MAX]), Err(Error::Reshape { .. })));
    assert!(matches!(x.reshape([usize::MAX, 0]), Err(Error::Reshape { .. })));
    assert!(matches!(Tensor::from_vec(vec![1.0f32; 5], [2, 3], &d), Err(Error::ElementCount { op: "from_vec", expected: 6, got: 5, .. })));
    Ok(())
}

#[test]
fn other_argument_errors() -> Result<()> {
    let d = dev!();
    let x = Tensor::zeros([2, 3], DType::F32, &d)?;
    assert!(matches!(x.clamp(2.0, 1.0), Err(Error::InvalidArgument { op: "clamp", .. })));
    assert!(matches!(x.layer_norm(0, None, None, 1e-5), Err(Error::InvalidArgument { op: "layer_norm", .. })));
    assert!(matches!(x.layer_norm(3, None, None, 1e-5), Err(Error::InvalidArgument { op: "layer_norm", .. })));
    let w = Tensor::ones([2], DType::F32, &d)?;
    assert!(matches!(x.layer_norm(1, Some(&w), None, 1e-5), Err(Error::InvalidArgument { op: "layer_norm", .. })));
    assert!(matches!(Tensor::concat(&[], 0), Err(Error::NoInputs { op: "concat" })));
    let y = Tensor::zeros([2, 4], DType::F32, &d)?;
    assert!(matches!(Tensor::concat(&[&x, &y], 0), Err(Error::ConcatShape { op: "concat", .. })));
    assert!(matches!(Tensor::zeros([usize::MAX, 4], DType::F32, &d), Err(Error::TooLarge { .. })));
    Ok(())
}

/// One random call with possibly bad arguments; any Ok/Err is fine, a panic is not.
fn random_call(op: u8, shape_a: &[usize], shape_b: &[usize], axis: isize, n: usize, dev: &Device) -> Result<()> {
    let a = Tensor::zeros(shape_a.to_vec(), DType::F32, dev)?;
    let b = Tensor::ones(shape_b.to_vec(), DType::F32, dev)?;
    let r = match op % 16 {
        0 => a.add(&b),
        1 => a.matmul(&b),
        2 => a.reshape(shape_b.to_vec()),
        3 => a.permute(&shape_b.iter().map(|&x| x % 5).collect::<Vec<_>>()),
        4 => a.sum(&[axis], axis % 2 == 0),
        5 => a.narrow(axis, n, n / 2),
        6 => a.expand(shape_b.to_vec()),
        7 => a.as_strided(shape_b, &shape_b.iter().map(|&x| x as isize - 2).collect::<Vec<_>>(), n),
        8 => Tensor::concat(&[&a, &b], axis),
        9 => a.index_select(axis, &Tensor::from_vec(vec![n as i32 - 3], [1], dev)?),
        10 => a.gather(axis, &Tensor::full(n as f64 - 2.0, shape_b.to_vec(), DType::I32, dev)?),
        11 => a.softmax(axis),
        12 => a.transpose(axis, n as isize - 3),
        13 => a.squeeze(axis),
        14 => a.argmax(Some(axis), true),
        _ => a.max(&[axis, n as isize], false),
    };
    // Realize whatever was built: errors from execution are fine too.
    if let Ok(t) = r {
        let _ = t.to_vec_f64();
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_bad_arguments_never_panic(
        op in 0u8..16,
        shape_a in prop::collection::vec(0usize..5, 0..4),
        shape_b in prop::collection::vec(0usize..5, 0..4),
        axis in -5isize..5,
        n in 0usize..7,
    ) {
        let d = dev!();
        let r = std::panic::catch_unwind(|| random_call(op, &shape_a, &shape_b, axis, n, &d));
        prop_assert!(r.is_ok(), "op {} on {:?} / {:?} axis {} n {} panicked", op, shape_a, shape_b, axis, n);
    }
}
