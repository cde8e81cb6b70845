// Views (reshape rules, bounds checks, no-copy guarantees) and ndarray interop.

use ndarray::{ArrayD, Axis, IxDyn};
use std::sync::Arc;

#[test]
fn reshape_of_contiguous_is_a_view_with_new_strides() -> Result<()> {
    let d = dev!();
    let x = randn(&[4, 6], 1, DType::F32, &d)?;
    let r = x.reshape([2, 3, 4])?;
    assert!(r.is_contiguous());
    assert_eq!(r.layout().strides, vec![12, 4, 1]);
    assert!(r.is_realized(), "a view of a realized tensor shares its storage");
    assert_eq!(kernels(&r)?, 0);
    let inferred = x.reshape([usize::MAX, 8])?;
    assert_eq!(inferred.shape(), &[3, 8]);
    assert_eq!(x.flatten()?.shape(), &[24]);
    assert_eq!(r.to_vec::<f32>()?, x.to_vec::<f32>()?);
    Ok(())
}

#[test]
fn reshape_of_transposed_copies_but_split_of_narrowed_rows_is_a_view() -> Result<()> {
    let d = dev!();
    let x = randn(&[4, 6], 2, DType::F32, &d)?;
    // Merging the axes of a transpose needs a copy (PyTorch's rule).
    let t = x.t()?;
    let flat = t.reshape([24])?;
    assert!(flat.is_contiguous());
    assert!(!flat.is_realized(), "the copy is a kernel");
    assert_eq!(kernels(&flat)?, 1);
    check("reshape of transpose", &flat)?;
    // Splitting an axis of a transpose is a view.
    let split = t.reshape([3, 2, 4])?;
    assert!(split.is_realized());
    assert_eq!(split.layout().strides, vec![2, 1, 6]);
    check("split of transpose", &split.mul_scalar(1.0)?)?;
    // Rows 1..3 are contiguous: reshaping them is a view at an offset.
    let rows = x.narrow(0, 1, 2)?.reshape([3, 4])?;
    assert_eq!((rows.layout().strides.clone(), rows.layout().offset), (vec![4, 1], 6));
    assert!(rows.is_realized());
    // Narrowed columns cannot merge with rows: a copy.
    let cols = x.narrow(1, 1, 3)?;
    assert!(!cols.is_contiguous());
    let merged = cols.reshape([12])?;
    assert!(!merged.is_realized());
    check("reshape of narrowed columns", &merged)?;
    Ok(())
}

#[test]
fn squeeze_unsqueeze_transpose_permute_layouts() -> Result<()> {
    let d = dev!();
    let x = randn(&[2, 1, 3], 3, DType::F32, &d)?;
    assert_eq!(x.squeeze(1)?.shape(), &[2, 3]);
    assert_eq!(x.unsqueeze(-1)?.shape(), &[2, 1, 3, 1]);
    assert_eq!(x.unsqueeze(0)?.shape(), &[1, 2, 1, 3]);
    let p = x.permute(&[2, 0, 1])?;
    assert_eq!((p.shape(), p.layout().strides.clone()), (&[3, 2, 1][..], vec![1, 3, 3]));
    assert_eq!(x.transpose(0, -1)?.shape(), &[3, 1, 2]);
    assert_eq!(randn(&[5], 4, DType::F32, &d)?.t()?.shape(), &[5], "t() of a vector is itself");
    Ok(())
}

#[test]
fn as_strided_out_of_bounds_is_an_error() -> Result<()> {
    let d = dev!();
    let x = randn(&[4], 5, DType::F32, &d)?;
    assert!(x.as_strided(&[2, 2], &[2, 1], 0).is_ok());
    let e = x.as_strided(&[2, 2], &[2, 1], 1).unwrap_err();
    assert!(matches!(e, Error::ViewOutOfBounds { op: "as_strided", len: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("reads past storage of 4 elements"), "{e}");
    assert!(matches!(x.as_strided(&[3], &[-1], 1), Err(Error::ViewOutOfBounds { .. })), "negative stride below 0");
    assert!(matches!(x.as_strided(&[2], &[1, 1], 0), Err(Error::StrideRank { .. })));
    assert!(matches!(x.as_strided(&[2], &[isize::MAX], 0), Err(Error::ViewOutOfBounds { .. })), "overflowing stride");
    assert!(x.as_strided(&[0, 5], &[100, 100], 3).is_ok(), "an empty view reads nothing");
    Ok(())
}

#[test]
fn narrow_out_of_range_is_an_error() -> Result<()> {
    let d = dev!();
    let x = randn(&[3, 5], 6, DType::F32, &d)?;
    let e = x.narrow(1, 3, 3).unwrap_err();
    assert!(matches!(e, Error::NarrowOutOfRange { op: "narrow", axis: 1, start: 3, len: 3, size: 5, .. }), "{e:?}");
    assert!(matches!(x.narrow(0, usize::MAX, 2), Err(Error::NarrowOutOfRange { .. })), "overflowing start");
    assert!(matches!(x.narrow(2, 0, 1), Err(Error::AxisOutOfRange { .. })));
    assert_eq!(x.narrow(1, 5, 0)?.shape(), &[3, 0]);
    Ok(())
}

#[test]
fn contiguous_of_contiguous_returns_the_same_storage() -> Result<()> {
    let d = dev!();
    let x = randn(&[4, 5], 7, DType::F32, &d)?;
    let c = x.contiguous()?;
    assert!(Arc::ptr_eq(c.node(), x.node()), "same node, no copy");
    assert_eq!(c.layout(), x.layout());
    assert!(c.is_realized());
    assert_eq!(kernels(&c)?, 0);
    // An offset view that is contiguous is kept as well.
    let rows = x.narrow(0, 1, 2)?;
    let rc = rows.contiguous()?;
    assert!(Arc::ptr_eq(rc.node(), rows.node()));
    assert_eq!(rc.layout().offset, 5);
    // A transposed view is copied.
    let t = x.t()?.contiguous()?;
    assert!(t.is_contiguous() && !t.is_realized());
    assert_eq!(t.layout().strides, vec![4, 1]);
    check("contiguous of transpose", &t)?;
    Ok(())
}

#[test]
fn from_vec_into_ndarray_is_zero_copy() -> Result<()> {
    let d = dev!();
    let v: Vec<f32> = (0..12).map(|x| x as f32).collect();
    let ptr = v.as_ptr();
    let t = Tensor::from_vec(v, [3, 4], &d)?;
    assert!(t.is_realized());
    let a = t.into_ndarray::<f32>()?;
    if d.is_cpu() {
        assert_eq!(a.as_ptr(), ptr, "into_ndarray of the only owner moves the buffer");
    } else {
        // A GPU tensor's data lives in device memory: into_ndarray reads it back into a new buffer.
        eprintln!("{d}: zero-copy into_ndarray applies to the CPU only; checking the values");
    }
    assert_eq!(a.shape(), &[3, 4]);
    assert_eq!(a[[2, 1]], 9.0);
    Ok(())
}

#[test]
fn from_ndarray_is_zero_copy_and_round_trips() -> Result<()> {
    let _d = dev!();
    let arr = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let ptr = arr.as_ptr();
    let t = Tensor::from_ndarray(arr.clone())?;
    assert_eq!(t.shape(), &[2, 3]);
    assert_eq!(t.to_ndarray::<f64>()?, arr);
    let moved = Tensor::from_ndarray(ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap())?;
    let back = moved.into_ndarray::<f64>()?;
    assert_eq!(back, arr);
    let t2 = Tensor::from_ndarray(arr)?;
    assert_eq!(t2.into_ndarray::<f64>()?.as_ptr(), ptr, "from_ndarray then into_ndarray keeps the buffer");
    // A transposed (Fortran-order) array keeps its strides.
    let f = ArrayD::from_shape_vec(IxDyn(&[3, 2]), vec![1i32, 2, 3, 4, 5, 6]).unwrap().reversed_axes();
    let tf = Tensor::from_ndarray(f.clone())?;
    assert_eq!(tf.layout().strides, vec![1, 2]);
    assert_eq!(tf.to_ndarray::<i32>()?, f);
    Ok(())
}

#[test]
fn into_ndarray_of_a_shared_or_negative_stride_tensor_copies_correctly() -> Result<()> {
    let d = dev!();
    let x = randn(&[3, 4], 8, DType::F32, &d)?;
    let keep = x.clone();
    let a = x.into_ndarray::<f32>()?; // shared: a copy
    assert_eq!(a.iter().copied().collect::<Vec<_>>(), keep.to_vec::<f32>()?);
    let mut r = ArrayD::from_shape_vec(IxDyn(&[4]), vec![1u8, 2, 3, 4]).unwrap();
    r.invert_axis(Axis(0));
    let t = Tensor::from_ndarray(r)?;
    assert_eq!(t.into_ndarray::<u8>()?.iter().copied().collect::<Vec<_>>(), vec![4, 3, 2, 1]);
    let offset = randn(&[4, 4], 9, wide(&d), &d)?.narrow(0, 1, 2)?;
    let want = offset.to_vec_f64()?;
    let got: Vec<f64> = if offset.dtype() == DType::F64 {
        offset.into_ndarray::<f64>()?.iter().copied().collect()
    } else {
        offset.into_ndarray::<f32>()?.iter().map(|&v| v as f64).collect()
    };
    assert_eq!(got, want);
    let v = Tensor::from_ndarray_view(ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.0f32, 2.0, 3.0, 4.0]).unwrap().t(), &d)?;
    assert_eq!(v.to_vec::<f32>()?, vec![1.0, 3.0, 2.0, 4.0]);
    Ok(())
}

#[test]
fn from_bytes_and_from_slice_read_little_endian_data() -> Result<()> {
    let d = dev!();
    let vals = [1.5f32, -2.0, 3.25];
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = Tensor::from_bytes(&bytes[..], DType::F32, [3], &d)?;
    assert_eq!(t.to_vec::<f32>()?, vals.to_vec());
    // Unaligned input.
    let mut shifted = vec![0u8];
    shifted.extend(&bytes);
    assert_eq!(Tensor::from_bytes(&shifted[1..], DType::F32, [3], &d)?.to_vec::<f32>()?, vals.to_vec());
    assert!(matches!(Tensor::from_bytes(&bytes[..5], DType::F32, [3], &d), Err(Error::ElementCount { .. })));
    assert_eq!(Tensor::from_slice(&[1i32, 2], [2], &d)?.to_vec::<i32>()?, vec![1, 2]);
    Ok(())
}

#[test]
fn creation_ops_match_reference() -> Result<()> {
    let d = dev!();
    let a = Tensor::arange(2.0, -3.0, -0.5, DType::F32, &d)?;
    assert_eq!(a.shape(), &[10]);
    check("arange negative step", &a)?;
    assert_eq!(Tensor::arange(0.0, 5.0, 1.0, DType::I32, &d)?.to_vec::<i32>()?, vec![0, 1, 2, 3, 4]);
    assert_eq!(Tensor::arange(0.0, 0.0, 1.0, DType::F32, &d)?.shape(), &[0]);
    assert!(matches!(Tensor::arange(0.0, 1.0, 0.0, DType::F32, &d), Err(Error::InvalidArgument { .. })));
    for dtype in supported(&d, &FLOATS) {
        check(&format!("rand {dtype}"), &Tensor::rand([5, 7], 3, dtype, &d)?)?;
        check(&format!("randn {dtype}"), &Tensor::randn([5, 7], 3, dtype, &d)?)?;
        check(&format!("full {dtype}"), &Tensor::full(1.0 / 3.0, [2, 2], dtype, &d)?)?;
    }
    let r1 = Tensor::rand([100], 42, DType::F32, &d)?.to_vec::<f32>()?;
    let r2 = Tensor::rand([100], 42, DType::F32, &d)?.to_vec::<f32>()?;
    assert_eq!(r1, r2, "seeded");
    assert!(r1.iter().all(|&v| (0.0..1.0).contains(&v)));
    assert!(matches!(Tensor::randn([2], 1, DType::I32, &d), Err(Error::UnsupportedDType { .. })));
    assert_eq!(Tensor::ones([2], DType::U8, &d)?.to_vec::<u8>()?, vec![1, 1]);
    Ok(())
}

#[test]
fn view_of_a_lazy_constant_reads_the_viewed_elements() -> Result<()> {
    // Repro: constant folding turned a narrowed view of `zeros` that is the
    // graph output into a 1-element constant, while the tensor's layout still
    // pointed at offset 2 of the 4-element root: reading it panicked with an
    // index out of bounds in `CpuStorage::gather_f64`.
    let d = dev!();
    let z = Tensor::zeros([4, 1], DType::F32, &d)?.narrow(0, 2, 1)?;
    assert_eq!(z.to_vec_f64()?, vec![0.0]);
    let f = Tensor::full(7.0, [3, 4], DType::I32, &d)?.t()?.narrow(1, 1, 2)?;
    assert_eq!(f.to_vec::<i32>()?, vec![7; 8]);
    let e = Tensor::ones([2], wide(&d), &d)?.expand([3, 2])?;
    assert_eq!(e.to_vec_f64()?, vec![1.0; 6]);
    Ok(())
}
