//! Regression tests for crashes and mismatches the fuzz targets (`fuzz/`)
//! found, each the fuzzer's input written out as plain Rust. They run in
//! `cargo test` without cargo-fuzz.

use fusegraph_core::backend::cpu::reference;
use fusegraph_core::{DType, Device, Error, Tensor};

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

// npm API fuzzer: `zeros([1]).expand([2**32 - 1]).indexSelect(-1, idx)`
// panicked in the CPU index kernel on wasm32, where a coordinate past 2^31
// does not fit in `isize`. The kernel now indexes in checked i64 and copies
// without index lists; here the same view (and a gather on it) natively.
#[test]
fn index_ops_on_a_view_of_2_pow_32_minus_1_elements() {
    let big = Tensor::zeros([1], DType::F32, &DEV)
        .unwrap()
        .add_scalar(3.0)
        .unwrap()
        .expand([u32::MAX as usize])
        .unwrap();
    assert_eq!(big.numel(), u32::MAX as usize);
    let idx = Tensor::from_vec(vec![0i32, -1, 123_456_789], [3], &DEV).unwrap();
    let picked = big.index_select(-1, &idx).unwrap();
    assert_eq!(picked.to_vec::<f32>().unwrap(), vec![3.0; 3]);
    let gathered = big.gather(0, &idx).unwrap();
    assert_eq!(gathered.to_vec::<f32>().unwrap(), vec![3.0; 3]);
    // Every i32 index is in range for it, the most negative included.
    let edge = Tensor::from_vec(vec![i32::MIN, i32::MAX], [2], &DEV).unwrap();
    let picked = big.index_select(0, &edge).unwrap();
    assert_eq!(picked.to_vec::<f32>().unwrap(), vec![3.0; 2]);
    // Past the axis on a view of it: an error naming the op.
    let part = big.narrow(0, 0, 5).unwrap();
    let err = part
        .gather(0, &edge)
        .unwrap()
        .realize()
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::IndexOutOfRange {
                op: "gather",
                index: i64::MIN..=-6,
                size: 5,
                ..
            }
        ),
        "{err}"
    );
}

// npm API fuzzer: views whose element count overflows `usize` (wrapped on
// wasm32, to a small count) are refused with an error naming the op and
// the shape, whether the caller or the core builds them.
#[test]
fn views_and_results_whose_element_count_overflows_are_refused() {
    let one = Tensor::zeros([1, 1, 1], DType::F32, &DEV).unwrap();
    let huge = [1usize << 31, 1 << 31, 1 << 31];
    let err = one.expand(huge).unwrap_err();
    assert_eq!(
        err,
        Error::TooLarge {
            op: "expand",
            shape: huge.to_vec()
        }
    );
    // A broadcast the core builds itself: [2^40, 1] + [1, 2^40].
    let a = Tensor::zeros([1, 1], DType::F32, &DEV)
        .unwrap()
        .expand([1 << 40, 1])
        .unwrap();
    let b = Tensor::zeros([1, 1], DType::F32, &DEV)
        .unwrap()
        .expand([1, 1 << 40])
        .unwrap();
    let err = a.add(&b).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    // A count that fits is fine, and numel never wraps.
    let ok = one.expand([1 << 20, 1 << 20, 1]).unwrap();
    assert_eq!(ok.numel(), 1 << 40);
    assert_eq!(ok.layout().checked_numel("x"), Ok(1 << 40));
}

// Found with the fuzzer's limits: the CPU backend allocated with an
// infallible Vec, so a buffer the allocator refuses aborted the process
// (a trap on wasm32) instead of returning OutOfMemory.
#[test]
fn a_refused_allocation_is_out_of_memory_not_an_abort() {
    // 2^60 f32 = 4 EiB: within isize::MAX bytes, past any address space.
    let t = Tensor::zeros([1 << 60], DType::F32, &DEV)
        .unwrap()
        .add_scalar(1.0)
        .unwrap();
    let err = t.realize().map(|_| ()).unwrap_err();
    assert!(
        matches!(err, Error::OutOfMemory { op: "map", ref device, bytes, .. } if device == "cpu" && bytes == 1 << 62),
        "{err}"
    );
    // The process goes on: a small graph still runs.
    let small = Tensor::ones([3], DType::F32, &DEV)
        .unwrap()
        .add_scalar(1.0)
        .unwrap();
    assert_eq!(small.to_vec::<f32>().unwrap(), vec![2.0; 3]);
}

// npm API fuzzer: `arange` with a step finite in f64 but past f32's range
// gave NaN for f32 (the range is computed in f32: 0 * inf); now an error.
// f64 ranges take such steps.
#[test]
fn arange_past_f32_range_is_an_error_for_f32_not_nan() {
    for (start, end, step) in [(0.0, 1e40, 1e39), (1e39, 2e39, 1e38), (-3e38, 3e38, 1e38)] {
        let err = Tensor::arange(start, end, step, DType::F32, &DEV).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { op: "arange", .. }),
            "{start}, {end}, {step}: {err}"
        );
        assert!(err.to_string().contains("f32"), "{err}");
    }
    let f64s = Tensor::arange(0.0, 2e39, 1e39, DType::F64, &DEV).unwrap();
    assert_eq!(f64s.to_vec::<f64>().unwrap(), vec![0.0, 1e39]);
    // In range: exact values.
    let ok = Tensor::arange(-3e38, 3e38, 1e38, DType::F64, &DEV).unwrap();
    assert_eq!(ok.numel(), 6);
    let f32s = Tensor::arange(-2.0, 1.0, 0.5, DType::F32, &DEV).unwrap();
    assert_eq!(
        f32s.to_vec::<f32>().unwrap(),
        vec![-2.0, -1.5, -1.0, -0.5, 0.0, 0.5]
    );
    let near = Tensor::arange(0.0, 3e38, 1e38, DType::F32, &DEV).unwrap();
    assert!(near.to_vec::<f32>().unwrap().iter().all(|v| v.is_finite()));
}

// npm fuzzer (seed 1517039728): `zeros([4,4,5], i32).asStrided([1,1], [1,-1], 26)`
// then `expand([1,3,1])` read index 26 of a one-element buffer and panicked
// (a trap in wasm).
#[test]
fn as_strided_view_of_a_constant_reads_the_constant() {
    let base = Tensor::zeros([4, 4, 5], DType::I32, &DEV).unwrap();
    let v = base.as_strided(&[1, 1], &[1, -1], 26).unwrap();
    let e = v.expand([1, 3, 1]).unwrap();
    assert_eq!(same_as_reference(&e), vec![0.0; 3]);
    assert_eq!(v.to_vec::<i32>().unwrap(), vec![0]);
}

// graph target: a row kernel over a rank-0 tensor whose output is
// `where(x > x, s, cos(exp(s) * 0.25))` with `s` a stage value. `exp(s)` was
// computed once as a row scalar while `s` itself (read by the `where`) was
// not, so it read a stale 0 and the result was cos(0.25).
#[test]
fn uniform_row_value_whose_input_is_also_read_per_element() {
    let t0 = Tensor::from_vec(vec![0.75f32], [1], &DEV)
        .unwrap()
        .as_strided(&[], &[], 0)
        .unwrap();
    let t1 = t0.max(&[], true).unwrap();
    let t2 = t1.sum(&[], true).unwrap();
    let t5 = t2.exp().unwrap().mul_scalar(0.25).unwrap().cos().unwrap();
    let t10 = Tensor::where_cond(&t0.gt(&t0).unwrap(), &t2, &t5).unwrap();
    let want = reference::evaluate(&t10).expect("reference");
    let got = t10.to_vec_f64().unwrap();
    let w = want.iter().next().copied().unwrap();
    assert!((got[0] - w).abs() < 1e-6, "fast {got:?}, reference {w}");
}
