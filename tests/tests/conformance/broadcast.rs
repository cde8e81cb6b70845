// NumPy broadcasting and non-contiguous inputs.

use ndarray::{ArrayD, Axis, IxDyn};

#[test]
fn broadcast_add_64x64x3_plus_3() -> Result<()> {
    // The image bench shape [1024, 1024, 3] + [3], reduced.
    let d = dev!();
    let a = randn(&[64, 64, 3], 1, DType::F32, &d)?;
    let b = randn(&[3], 2, DType::F32, &d)?;
    let y = a.add(&b)?;
    assert_eq!(y.shape(), &[64, 64, 3]);
    check("[64,64,3] + [3]", &y)?;
    check("[3] * [64,64,3]", &b.mul(&a)?)?;
    Ok(())
}

#[test]
fn broadcast_mul_8x1x1_times_8x32x32() -> Result<()> {
    // The per-channel bench shape [64, 1, 1] * [64, 1024, 1024], reduced.
    let d = dev!();
    let a = randn(&[8, 1, 1], 3, DType::F32, &d)?;
    let b = randn(&[8, 32, 32], 4, DType::F32, &d)?;
    let y = a.mul(&b)?;
    assert_eq!(y.shape(), &[8, 32, 32]);
    check("[8,1,1] * [8,32,32]", &y)?;
    Ok(())
}

#[test]
fn broadcast_add_128x128_plus_128_and_column() -> Result<()> {
    // The bias bench shape [1024, 1024] + [1024], reduced, and a column [128, 1].
    let d = dev!();
    let a = randn(&[128, 128], 5, DType::F32, &d)?;
    let row = randn(&[128], 6, DType::F32, &d)?;
    let col = randn(&[128, 1], 7, DType::F32, &d)?;
    check("[128,128] + [128]", &a.add(&row)?)?;
    check("[128,128] - [128,1]", &a.sub(&col)?)?;
    let outer = col.mul(&row)?;
    assert_eq!(outer.shape(), &[128, 128]);
    check("[128,1] * [128] outer", &outer)?;
    Ok(())
}

#[test]
fn broadcast_with_rank0_scalar_and_size1_axes() -> Result<()> {
    let d = dev!();
    let s = Tensor::scalar(2.5, DType::F32, &d)?;
    assert_eq!(s.rank(), 0);
    assert_eq!(s.item::<f32>()?, 2.5);
    let a = randn(&[3, 4], 8, DType::F32, &d)?;
    check("rank-0 + [3,4]", &s.add(&a)?)?;
    check("[3,4] * rank-0", &a.mul(&s)?)?;
    let y = s.mul(&s)?;
    assert_eq!(y.shape(), &[] as &[usize]);
    assert_eq!(y.item::<f32>()?, 6.25);
    let b = randn(&[2, 1, 4, 1], 9, wide(&d), &d)?;
    let c = randn(&[3, 1, 5], 10, wide(&d), &d)?;
    let z = b.add(&c)?;
    assert_eq!(z.shape(), &[2, 3, 4, 5]);
    check("[2,1,4,1] + [3,1,5]", &z)?;
    Ok(())
}

#[test]
fn broadcast_with_zero_sized_axis() -> Result<()> {
    let d = dev!();
    let a = Tensor::zeros([0, 3], DType::F32, &d)?;
    let b = randn(&[3], 11, DType::F32, &d)?;
    let y = a.add(&b)?;
    assert_eq!(y.shape(), &[0, 3]);
    assert!(y.to_vec::<f32>()?.is_empty());
    let one = randn(&[1, 3], 12, DType::F32, &d)?;
    assert_eq!(one.add(&a)?.shape(), &[0, 3]);
    Ok(())
}

#[test]
fn mixed_dtypes_promote_like_numpy() -> Result<()> {
    let d = dev!();
    let i = Tensor::from_vec(vec![1i32, 2, 3], [3], &d)?;
    let h = leaf(&[0.5, 0.25, 0.125], &[3], DType::F16, &d)?;
    let b = leaf(&[0.5, 0.25, 0.125], &[3], DType::BF16, &d)?;
    let u = Tensor::from_vec(vec![1u8, 2, 3], [3], &d)?;
    let t = Tensor::from_vec(vec![true, false, true], [3], &d)?;
    assert_eq!(i.add(&h)?.dtype(), DType::F16);
    assert_eq!(h.add(&b)?.dtype(), DType::F32);
    assert_eq!(u.add(&i)?.dtype(), DType::I32);
    assert_eq!(t.add(&u)?.dtype(), DType::U8);
    check("i32 + f16", &i.add(&h)?)?;
    check("f16 + bf16", &h.add(&b)?)?;
    check("bool + u8", &t.add(&u)?)?;
    Ok(())
}

#[test]
fn transposed_input_feeds_elementwise_op() -> Result<()> {
    let d = dev!();
    let a = randn(&[33, 65], 13, DType::F32, &d)?;
    let b = randn(&[65, 33], 14, DType::F32, &d)?;
    let at = a.t()?;
    assert!(!at.is_contiguous());
    check("a.T + b", &at.add(&b)?)?;
    let p = randn(&[2, 3, 4, 5], 15, wide(&d), &d)?.permute(&[3, 1, 0, 2])?;
    assert_eq!(p.shape(), &[5, 3, 2, 4]);
    check("permuted exp", &p.exp()?)?;
    Ok(())
}

/// A fused chain whose output spans several of the CPU fast path's map
/// chunks (8192 elements) with a remainder, reading a transposed view, a
/// broadcast row and a broadcast column: the chunks are evaluated straight
/// into the f32 and f64 outputs, and through a scratch buffer for f16.
#[test]
fn fused_chain_over_views_and_broadcasts_spans_several_chunks() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &[DType::F32, DType::F64, DType::F16]) {
        let a = randn(&[157, 131], 18, dtype, &d)?.t()?;
        let row = randn(&[157], 19, dtype, &d)?;
        let col = randn(&[131, 1], 20, dtype, &d)?;
        assert!(!a.is_contiguous());
        let y = a.mul(&row)?.add(&col)?.relu()?;
        assert_eq!(y.shape(), &[131, 157]);
        check(&format!("relu(a.T * row + col) {dtype}"), &y)?;
    }
    Ok(())
}

#[test]
fn narrowed_and_offset_views_feed_elementwise_op() -> Result<()> {
    let d = dev!();
    let a = randn(&[10, 12], 16, DType::F32, &d)?;
    let n = a.narrow(0, 3, 4)?.narrow(1, 5, 6)?;
    assert_eq!(n.shape(), &[4, 6]);
    assert_eq!(n.layout().offset, 3 * 12 + 5);
    check("narrowed * 2", &n.mul_scalar(2.0)?)?;
    check("narrowed + transposed", &n.add(&a.narrow(1, 0, 4)?.narrow(0, 1, 6)?.t()?)?)?;
    Ok(())
}

#[test]
fn expanded_input_feeds_elementwise_op() -> Result<()> {
    let d = dev!();
    let a = randn(&[1, 7], 17, DType::F32, &d)?;
    let e = a.expand([5, 7])?;
    assert_eq!(e.layout().strides, vec![0, 1]);
    check("expanded sin", &e.sin()?)?;
    let b = randn(&[3, 1], 18, DType::F32, &d)?.broadcast_to([2, 3, 4])?;
    assert_eq!(b.layout().strides, vec![0, 1, 0]);
    check("broadcast_to tanh", &b.tanh()?)?;
    Ok(())
}

#[test]
fn negative_strides_from_reversed_ndarray() -> Result<()> {
    let d = dev!();
    let data: Vec<f32> = (0..24).map(|x| x as f32 * 0.5 - 3.0).collect();
    let mut arr = ArrayD::from_shape_vec(IxDyn(&[4, 6]), data.clone()).unwrap();
    arr.invert_axis(Axis(0));
    arr.invert_axis(Axis(1));
    let want: Vec<f32> = arr.iter().copied().collect();
    // from_ndarray makes a host tensor; to_device keeps its negative-stride view.
    let t = Tensor::from_ndarray(arr)?.to_device(&d)?;
    assert_eq!(t.layout().strides, vec![-6, -1]);
    assert_eq!(t.layout().offset, 23);
    assert_eq!(t.to_vec::<f32>()?, want);
    check("reversed * 3 + 1", &t.mul_scalar(3.0)?.add_scalar(1.0)?)?;
    let other = randn(&[4, 6], 19, DType::F32, &d)?;
    check("reversed + contiguous", &t.add(&other)?)?;
    check("reversed transposed relu", &t.t()?.relu()?)?;
    Ok(())
}

#[test]
fn as_strided_views_with_negative_strides_and_offsets() -> Result<()> {
    let d = dev!();
    let base = Tensor::arange(0.0, 20.0, 1.0, DType::F32, &d)?;
    base.realize()?;
    let v = base.as_strided(&[3, 4], &[-5, 1], 12)?;
    assert_eq!(v.to_vec::<f32>()?, vec![12.0, 13.0, 14.0, 15.0, 7.0, 8.0, 9.0, 10.0, 2.0, 3.0, 4.0, 5.0]);
    check("as_strided negative rows", &v.mul_scalar(2.0)?)?;
    let w = base.as_strided(&[2, 3], &[1, 2], 3)?; // overlapping windows
    assert_eq!(w.to_vec::<f32>()?, vec![3.0, 5.0, 7.0, 4.0, 6.0, 8.0]);
    check("as_strided overlapping", &w.add(&v.narrow(0, 0, 2)?.narrow(1, 0, 3)?)?)?;
    Ok(())
}

#[test]
fn as_strided_of_a_lazy_tensor_views_its_result() -> Result<()> {
    let d = dev!();
    let x = Tensor::arange(0.0, 12.0, 1.0, DType::F32, &d)?.mul_scalar(2.0)?;
    let v = x.as_strided(&[2, 2], &[-3, 2], 7)?;
    assert_eq!(v.to_vec::<f32>()?, vec![14.0, 18.0, 8.0, 12.0]);
    check("as_strided of lazy", &v.add_scalar(1.0)?)?;
    Ok(())
}
