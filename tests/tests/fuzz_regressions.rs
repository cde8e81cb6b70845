//! Regression tests for crashes and mismatches the fuzz targets (`fuzz/`)
//! found, each the fuzzer's input written out as plain Rust. They run in
//! `cargo test` without cargo-fuzz.

use fusegraph_core::backend::cpu::reference;
use fusegraph_core::{Device, Error, Tensor};

const DEV: Device = Device::Cpu;

/// Both paths agree: same shape, and every element equal or both NaN.
fn same_as_reference(t: &Tensor) -> Vec<f64> {
    let want = reference::evaluate(t).expect("reference");
    let got = t.to_vec_f64().expect("fast path");
    assert_eq!(want.shape(), t.shape());
    for (g, w) in got.iter().zip(want.iter()) {
        assert!(
            g == w || (g.is_nan() && w.is_nan()),
            "fast {g}, reference {w}"
        );
    }
    got
}

// graph target: a reduction over an axis of size 0 of a tensor with other
// rows ([7, 0] along axis 1) sliced its dense input at the row's offset,
// past the end of the empty storage, and panicked ("range start index 1
// out of range for slice of length 0").
#[test]
fn reduce_over_an_empty_axis_with_rows() {
    let t0 = Tensor::from_vec(Vec::<f32>::new(), [7, 0], &DEV).unwrap();
    let sum = t0.sum(&[1], false).unwrap();
    assert_eq!(same_as_reference(&sum), vec![0.0; 7]);
    let mean = t0.mean(&[1], true).unwrap();
    assert!(same_as_reference(&mean).iter().all(|v| v.is_nan()));
    // The fuzzer's case: layer_norm over the empty last axis, then a scale.
    let t1 = t0.layer_norm(1, None, None, 0.5).unwrap();
    let t2 = t1.mul_scalar(0.25).unwrap();
    assert!(same_as_reference(&t2).is_empty());
    // Empty rows of a strided view, and of rank 3 with the middle axis empty.
    let t3 = Tensor::from_vec(Vec::<f32>::new(), [3, 0, 2], &DEV).unwrap();
    let s = t3.sum(&[1], false).unwrap();
    assert_eq!(same_as_reference(&s), vec![0.0; 6]);
    let m = t3.max(&[0, 2], false).unwrap();
    assert!(same_as_reference(&m).is_empty());
    assert!(
        t3.max(&[1], false).is_err(),
        "max over no elements is an error"
    );
}

// graph target: index_select on a tensor whose result is empty (another
// axis has size 0) with an out-of-range index: the fast path checked the
// indices only while copying elements, so it returned an empty tensor where
// the reference path (and PyTorch) report the bad index.
#[test]
fn index_select_checks_indices_when_the_result_is_empty() {
    let t0 = Tensor::from_vec(Vec::<f32>::new(), [5, 0, 0, 0], &DEV).unwrap();
    let idx = Tensor::from_vec(vec![0i32], [1], &DEV).unwrap();
    let t1 = t0.index_select(-1, &idx).unwrap();
    assert_eq!(t1.shape(), &[5, 0, 0, 1]);
    assert!(reference::evaluate(&t1).is_err());
    let err = t1.realize().unwrap_err();
    assert!(
        matches!(
            err,
            Error::IndexOutOfRange {
                op: "index_select",
                index: 0,
                axis: 3,
                size: 0
            }
        ),
        "{err}"
    );
    // A negative index past the front, on a non-empty axis of an empty result.
    let t2 = Tensor::from_vec(Vec::<f32>::new(), [0, 3], &DEV).unwrap();
    let idx = Tensor::from_vec(vec![1i32, -4], [2], &DEV).unwrap();
    let err = t2.index_select(1, &idx).unwrap().realize().unwrap_err();
    assert!(
        matches!(
            err,
            Error::IndexOutOfRange {
                index: -4,
                size: 3,
                ..
            }
        ),
        "{err}"
    );
    // In-range indices on an empty result still realize (to nothing).
    let idx = Tensor::from_vec(vec![2i32, -3], [2], &DEV).unwrap();
    let ok = t2.index_select(1, &idx).unwrap();
    assert!(same_as_reference(&ok).is_empty());
}

// graph target: an empty `as_strided` view (a size-0 axis) accepts any
// strides, as nothing is read; with strides like isize::MAX the CPU walk's
// axis merging multiplied them by the sizes and overflowed ("attempt to
// multiply with overflow"). Empty views now get contiguous strides.
#[test]
fn empty_as_strided_view_with_huge_strides() {
    let t0 = Tensor::from_vec(Vec::<f32>::new(), [3, 1, 0], &DEV).unwrap();
    let t1 = t0
        .as_strided(&[4, 0, 2], &[6, isize::MIN, isize::MAX], 0)
        .unwrap();
    let t2 = t1.t().unwrap();
    assert_eq!(t2.shape(), &[4, 2, 0]);
    let t3 = t2.mean(&[], false).unwrap();
    assert!(same_as_reference(&t3)[0].is_nan());
    // A reduction over the empty axis, with rows, and an elementwise op.
    let s = t1.sum(&[1], false).unwrap();
    assert_eq!(same_as_reference(&s), vec![0.0; 8]);
    let e = t1.exp().unwrap().add_scalar(1.0).unwrap();
    assert!(same_as_reference(&e).is_empty());
    // Any offset is accepted for an empty view too.
    let t4 = t0.as_strided(&[0], &[isize::MAX], usize::MAX).unwrap();
    assert!(same_as_reference(&t4.neg().unwrap()).is_empty());
    // A non-empty view with a stride past the storage is still an error.
    let err = t0.as_strided(&[2], &[isize::MAX], 0).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ViewOutOfBounds {
                op: "as_strided",
                ..
            }
        ),
        "{err}"
    );
}
