// Unary and binary ops on every dtype, NaN propagation, casts.

type Unary = fn(&Tensor) -> Result<Tensor>;
type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// Ops defined on all reals.
const UNARY_ALL_REALS: [(&str, Unary); 11] = [
    ("neg", Tensor::neg),
    ("abs", Tensor::abs),
    ("exp", Tensor::exp),
    ("sin", Tensor::sin),
    ("cos", Tensor::cos),
    ("tanh", Tensor::tanh),
    ("sigmoid", Tensor::sigmoid),
    ("relu", Tensor::relu),
    ("gelu", Tensor::gelu),
    ("gelu_tanh", Tensor::gelu_tanh),
    ("silu", Tensor::silu),
];

/// Ops defined on positive reals (checked on [0.1, 4)).
const UNARY_POSITIVE: [(&str, Unary); 3] = [("log", Tensor::log), ("sqrt", Tensor::sqrt), ("rsqrt", Tensor::rsqrt)];

const BINARY_ARITH: [(&str, Binary); 5] = [
    ("add", Tensor::add),
    ("sub", Tensor::sub),
    ("mul", Tensor::mul),
    ("maximum", Tensor::maximum),
    ("minimum", Tensor::minimum),
];

const BINARY_PREDICATES: [(&str, Binary); 8] = [
    ("eq", Tensor::eq),
    ("ne", Tensor::ne),
    ("lt", Tensor::lt),
    ("le", Tensor::le),
    ("gt", Tensor::gt),
    ("ge", Tensor::ge),
    ("logical_and", Tensor::logical_and),
    ("logical_or", Tensor::logical_or),
];

// 20467 elements: more than two 8192-element chunks of the CPU fast path's
// map kernels, with a remainder.
const N: [usize; 2] = [97, 211];

#[test]
fn unary_ops_on_every_float_dtype_match_reference() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        let x = randn(&N, 1, dtype, &d)?;
        for (name, op) in UNARY_ALL_REALS {
            check(&format!("{name} {dtype}"), &op(&x)?)?;
        }
        let p = uniform(&N, 2, 0.1, 4.0, dtype, &d)?;
        for (name, op) in UNARY_POSITIVE {
            check(&format!("{name} {dtype}"), &op(&p)?)?;
        }
    }
    Ok(())
}

#[test]
fn unary_ops_at_special_values_f32_and_f64() -> Result<()> {
    let d = dev!();
    let vals = [0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 30.0, -30.0, 100.0, -100.0, 1e10, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
    for dtype in supported(&d, &[DType::F64, DType::F32]) {
        let x = leaf(&vals, &[vals.len()], dtype, &d)?;
        for (name, op) in UNARY_ALL_REALS {
            check(&format!("{name} {dtype} special values"), &op(&x)?)?;
        }
        let p = leaf(&[0.0, 1e-30, 1.0, 1e30, f64::INFINITY, -1.0, f64::NAN], &[7], dtype, &d)?;
        for (name, op) in UNARY_POSITIVE {
            check(&format!("{name} {dtype} special values"), &op(&p)?)?;
        }
    }
    Ok(())
}

#[test]
fn exp_f32_overflows_to_inf_and_underflows_to_zero() -> Result<()> {
    let d = dev!();
    let x = leaf(&[88.0, 89.0, 100.0, f64::INFINITY, -110.0, f64::NEG_INFINITY], &[6], DType::F32, &d)?;
    let y = x.exp()?.to_vec::<f32>()?;
    assert!(y[0].is_finite() && y[0] > 1e38, "{y:?}");
    assert_eq!(&y[1..4], &[f32::INFINITY; 3], "exp of 89, 100 and inf must be inf: {y:?}");
    assert_eq!(&y[4..], &[0.0, 0.0], "{y:?}");
    Ok(())
}

#[test]
fn float_only_unary_ops_on_integers_compute_in_f32() -> Result<()> {
    let d = dev!();
    let x = Tensor::from_vec(vec![1i32, 2, 3, 4], [4], &d)?;
    for (name, op) in UNARY_POSITIVE.iter().chain(&UNARY_ALL_REALS[2..7]) {
        let y = op(&x)?;
        if !["neg", "abs", "relu"].contains(name) {
            assert_eq!(y.dtype(), DType::F32, "{name} of i32");
        }
        check(&format!("{name} i32"), &y)?;
    }
    let b = Tensor::from_vec(vec![true, false], [2], &d)?;
    assert_eq!(b.exp()?.dtype(), DType::F32);
    check("exp bool", &b.exp()?)?;
    Ok(())
}

#[test]
fn neg_abs_relu_on_i32_and_u8_are_exact_and_wrap() -> Result<()> {
    let d = dev!();
    let x = Tensor::from_vec(vec![-5i32, 0, 7, i32::MIN, i32::MAX], [5], &d)?;
    assert_eq!(x.neg()?.to_vec::<i32>()?, vec![5, 0, -7, i32::MIN, -i32::MAX]);
    assert_eq!(x.abs()?.to_vec::<i32>()?, vec![5, 0, 7, i32::MIN, i32::MAX]);
    assert_eq!(x.relu()?.to_vec::<i32>()?, vec![0, 0, 7, 0, i32::MAX]);
    for op in [Tensor::neg, Tensor::abs, Tensor::relu] {
        check("int unary", &op(&x)?)?;
    }
    let u = Tensor::from_vec(vec![0u8, 3, 255], [3], &d)?;
    assert_eq!(u.neg()?.to_vec::<u8>()?, vec![0, 253, 1]);
    check("neg u8", &u.neg()?)?;
    check("abs u8", &u.abs()?)?;
    Ok(())
}

#[test]
fn neg_of_bool_is_an_error_and_logical_not_gives_bool() -> Result<()> {
    let d = dev!();
    let b = Tensor::from_vec(vec![true, false], [2], &d)?;
    assert!(matches!(b.neg(), Err(Error::UnsupportedDType { .. })));
    assert_eq!(b.logical_not()?.to_vec::<bool>()?, vec![false, true]);
    let f = leaf(&[0.0, 1.5, -0.0, f64::NAN], &[4], DType::F32, &d)?;
    let n = f.logical_not()?;
    assert_eq!(n.dtype(), DType::Bool);
    assert_eq!(n.to_vec::<bool>()?, vec![true, false, true, false]);
    check("logical_not f32", &n)?;
    Ok(())
}

#[test]
fn binary_ops_on_every_float_dtype_match_reference() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        let a = randn(&N, 3, dtype, &d)?;
        let b = randn(&N, 4, dtype, &d)?;
        for (name, op) in BINARY_ARITH.iter().chain(&BINARY_PREDICATES) {
            let y = op(&a, &b)?;
            if BINARY_PREDICATES.iter().any(|(n, _)| n == name) {
                assert_eq!(y.dtype(), DType::Bool, "{name}");
            } else {
                assert_eq!(y.dtype(), dtype, "{name}");
            }
            check(&format!("{name} {dtype}"), &y)?;
        }
        let den = uniform(&N, 5, 0.5, 2.0, dtype, &d)?;
        check(&format!("div {dtype}"), &a.div(&den)?)?;
        let base = uniform(&N, 6, 0.1, 3.0, dtype, &d)?;
        let ex = uniform(&N, 7, -2.0, 2.0, dtype, &d)?;
        check(&format!("pow {dtype}"), &base.pow(&ex)?)?;
    }
    Ok(())
}

#[test]
fn scalar_variants_match_reference_and_keep_dtype() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        let a = uniform(&N, 8, 0.1, 3.0, dtype, &d)?;
        let cases: [(&str, Tensor); 9] = [
            ("add_scalar", a.add_scalar(1.5)?),
            ("sub_scalar", a.sub_scalar(0.25)?),
            ("mul_scalar", a.mul_scalar(-3.0)?),
            ("div_scalar", a.div_scalar(7.0)?),
            ("pow_scalar", a.pow_scalar(2.5)?),
            ("maximum_scalar", a.maximum_scalar(1.0)?),
            ("minimum_scalar", a.minimum_scalar(1.0)?),
            ("lt_scalar", a.lt_scalar(1.0)?),
            ("clamp", a.clamp(0.5, 2.0)?),
        ];
        for (name, y) in &cases {
            if *name != "lt_scalar" {
                assert_eq!(y.dtype(), dtype, "{name}");
            }
            check(&format!("{name} {dtype}"), y)?;
        }
    }
    Ok(())
}

#[test]
fn integer_division_truncates_toward_zero_and_div_by_zero_is_zero() -> Result<()> {
    let d = dev!();
    let a = Tensor::from_vec(vec![-7i32, 7, 7, -7, 0, 5, i32::MIN], [7], &d)?;
    let b = Tensor::from_vec(vec![2i32, 2, -2, -2, 3, 0, -1], [7], &d)?;
    let q = a.div(&b)?;
    assert_eq!(q.dtype(), DType::I32);
    assert_eq!(q.to_vec::<i32>()?, vec![-3, 3, -3, 3, 0, 0, i32::MIN]);
    check("div i32", &q)?;
    let u = Tensor::from_vec(vec![7u8, 200, 9], [3], &d)?;
    let v = Tensor::from_vec(vec![2u8, 0, 10], [3], &d)?;
    assert_eq!(u.div(&v)?.to_vec::<u8>()?, vec![3, 0, 0]);
    check("div u8", &u.div(&v)?)?;
    Ok(())
}

#[test]
fn integer_arithmetic_wraps_on_i32_and_u8() -> Result<()> {
    let d = dev!();
    let u = Tensor::from_vec(vec![250u8, 3, 200, 2], [4], &d)?;
    let v = Tensor::from_vec(vec![10u8, 5, 2, 9], [4], &d)?;
    assert_eq!(u.add(&v)?.to_vec::<u8>()?, vec![4, 8, 202, 11]);
    assert_eq!(u.sub(&v)?.to_vec::<u8>()?, vec![240, 254, 198, 249]);
    assert_eq!(u.mul(&v)?.to_vec::<u8>()?, vec![196, 15, 144, 18]);
    assert_eq!(u.pow(&v)?.to_vec::<u8>()?, vec![0, 243, 64, 0]);
    let a = Tensor::from_vec(vec![i32::MAX, 65536, -3, 2], [4], &d)?;
    let b = Tensor::from_vec(vec![1i32, 65536, 2, -1], [4], &d)?;
    assert_eq!(a.add(&b)?.to_vec::<i32>()?, vec![i32::MIN, 131072, -1, 1]);
    assert_eq!(a.mul(&b)?.to_vec::<i32>()?, vec![i32::MAX, 0, -6, -2]);
    assert_eq!(a.pow(&b)?.to_vec::<i32>()?, vec![i32::MAX, 0, 9, 0]);
    for (name, op) in BINARY_ARITH.iter().chain(&BINARY_PREDICATES) {
        check(&format!("{name} i32"), &op(&a, &b)?)?;
        check(&format!("{name} u8"), &op(&u, &v)?)?;
    }
    Ok(())
}

#[test]
fn random_i32_binary_ops_match_reference() -> Result<()> {
    let d = dev!();
    let a = randint(&N, 1, -50, 50, &d)?;
    let b = randint(&N, 2, -7, 8, &d)?;
    for (name, op) in BINARY_ARITH.iter().chain(&BINARY_PREDICATES) {
        check(&format!("{name} i32 random"), &op(&a, &b)?)?;
    }
    check("div i32 random", &a.div(&b)?)?;
    Ok(())
}

#[test]
fn comparisons_on_integers_floats_and_nan_give_bool() -> Result<()> {
    let d = dev!();
    let a = leaf(&[1.0, 2.0, f64::NAN, 3.0], &[4], DType::F32, &d)?;
    let b = leaf(&[1.0, 3.0, f64::NAN, 2.0], &[4], DType::F32, &d)?;
    assert_eq!(a.eq(&b)?.to_vec::<bool>()?, vec![true, false, false, false]);
    assert_eq!(a.ne(&b)?.to_vec::<bool>()?, vec![false, true, true, true]);
    assert_eq!(a.lt(&b)?.to_vec::<bool>()?, vec![false, true, false, false]);
    assert_eq!(a.ge(&b)?.to_vec::<bool>()?, vec![true, false, false, true]);
    let i = Tensor::from_vec(vec![-1i32, 0, 5], [3], &d)?;
    assert_eq!(i.gt_scalar(0.0)?.to_vec::<bool>()?, vec![false, false, true]);
    assert_eq!(i.le_scalar(0.0)?.to_vec::<bool>()?, vec![true, true, false]);
    Ok(())
}

#[test]
fn logical_ops_on_bool_and_numbers() -> Result<()> {
    let d = dev!();
    let a = Tensor::from_vec(vec![true, true, false, false], [4], &d)?;
    let b = Tensor::from_vec(vec![true, false, true, false], [4], &d)?;
    assert_eq!(a.logical_and(&b)?.to_vec::<bool>()?, vec![true, false, false, false]);
    assert_eq!(a.logical_or(&b)?.to_vec::<bool>()?, vec![true, true, true, false]);
    let x = leaf(&[0.0, 2.0, -1.0, 0.0], &[4], DType::F32, &d)?;
    let y = x.logical_or(&a)?;
    assert_eq!(y.dtype(), DType::Bool);
    assert_eq!(y.to_vec::<bool>()?, vec![true, true, true, false]);
    for (name, op) in BINARY_PREDICATES {
        check(&format!("{name} bool"), &op(&a, &b)?)?;
    }
    Ok(())
}

#[test]
fn bool_arithmetic_matches_reference_inside_a_fused_chain() -> Result<()> {
    // bool + bool is a bool (true + true = true, as in PyTorch); casting the
    // sum to u8 or f32 inside the same kernel must see 1, not 2.
    let d = dev!();
    let a = Tensor::from_vec(vec![true, true, false, false], [4], &d)?;
    let b = Tensor::from_vec(vec![true, false, true, false], [4], &d)?;
    let s = a.add(&b)?;
    assert_eq!(s.dtype(), DType::Bool);
    assert_eq!(s.to_vec::<bool>()?, vec![true, true, true, false]);
    let as_u8 = a.add(&b)?.cast(DType::U8)?;
    check("bool add then cast u8", &as_u8)?;
    assert_eq!(as_u8.to_vec::<u8>()?, vec![1, 1, 1, 0]);
    let as_f32 = a.add(&b)?.cast(DType::F32)?.mul_scalar(3.0)?;
    check("bool add then cast f32", &as_f32)?;
    Ok(())
}

#[test]
fn maximum_minimum_relu_propagate_nan() -> Result<()> {
    let d = dev!();
    for dtype in supported(&d, &FLOATS) {
        let a = leaf(&[f64::NAN, 1.0, f64::NAN, -2.0, 0.0], &[5], dtype, &d)?;
        let b = leaf(&[1.0, f64::NAN, f64::NAN, -3.0, -0.0], &[5], dtype, &d)?;
        let mx = a.maximum(&b)?.to_vec_f64()?;
        let mn = a.minimum(&b)?.to_vec_f64()?;
        assert!(mx[..3].iter().all(|v| v.is_nan()), "maximum {dtype}: {mx:?}");
        assert!(mn[..3].iter().all(|v| v.is_nan()), "minimum {dtype}: {mn:?}");
        assert_eq!((mx[3], mn[3]), (-2.0, -3.0));
        let r = a.relu()?.to_vec_f64()?;
        assert!(r[0].is_nan() && r[2].is_nan(), "relu {dtype}: {r:?}");
        assert_eq!(&r[3..], &[0.0, 0.0]);
        assert!(a.maximum_scalar(0.0)?.to_vec_f64()?[0].is_nan());
        assert!(a.clamp(-1.0, 1.0)?.to_vec_f64()?[0].is_nan(), "clamp keeps NaN");
        check(&format!("maximum nan {dtype}"), &a.maximum(&b)?)?;
        check(&format!("minimum nan {dtype}"), &a.minimum(&b)?)?;
        check(&format!("relu nan {dtype}"), &a.relu()?)?;
    }
    Ok(())
}

#[test]
fn where_cond_selects_and_promotes() -> Result<()> {
    let d = dev!();
    let c = Tensor::from_vec(vec![true, false, true], [3], &d)?;
    let a = Tensor::from_vec(vec![1i32, 2, 3], [3], &d)?;
    let b = leaf(&[0.5], &[1], DType::F32, &d)?;
    let y = Tensor::where_cond(&c, &a, &b)?;
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(y.to_vec::<f32>()?, vec![1.0, 0.5, 3.0]);
    check("where", &y)?;
    let cf = randn(&[4, 5], 9, DType::F32, &d)?.gt_scalar(0.0)?;
    let y = Tensor::where_cond(&cf, &randn(&[4, 5], 10, DType::F16, &d)?, &randn(&[5], 11, DType::BF16, &d)?)?;
    assert_eq!(y.dtype(), DType::F32, "f16 with bf16 meets at f32");
    check("where broadcast", &y)?;
    Ok(())
}

const CAST_VALUES: [f64; 18] = [
    -300.7, -129.0, -2.9, -0.5, -0.0, 0.0, 0.25, 1.5, 2.5, 127.9, 255.9, 256.0, 300.7, 70000.0, 3e9, f64::NAN, f64::INFINITY, f64::NEG_INFINITY,
];

#[test]
fn casts_between_all_dtypes_match_reference() -> Result<()> {
    let d = dev!();
    for from in supported(&d, &DType::ALL) {
        let x = leaf(&CAST_VALUES, &[CAST_VALUES.len()], from, &d)?;
        for to in supported(&d, &DType::ALL) {
            let y = x.cast(to)?;
            assert_eq!(y.dtype(), to);
            // A cast is exact in both paths: one rounding of the same value.
            check_tol(&format!("cast {from} -> {to}"), &y, Tol::of(to).ops(0).reduce(0))?;
        }
    }
    Ok(())
}

#[test]
fn float_to_int_casts_truncate_and_saturate() -> Result<()> {
    let d = dev!();
    let x = leaf(&CAST_VALUES, &[CAST_VALUES.len()], wide(&d), &d)?;
    let u8s = x.cast(DType::U8)?.to_vec::<u8>()?;
    assert_eq!(u8s, vec![0, 0, 0, 0, 0, 0, 0, 1, 2, 127, 255, 255, 255, 255, 255, 0, 255, 0]);
    let i32s = x.cast(DType::I32)?.to_vec::<i32>()?;
    assert_eq!(i32s, vec![-300, -129, -2, 0, 0, 0, 0, 1, 2, 127, 255, 256, 300, 70000, i32::MAX, 0, i32::MAX, i32::MIN]);
    let bools = x.cast(DType::Bool)?.to_vec::<bool>()?;
    assert_eq!(bools, CAST_VALUES.iter().map(|&v| v != 0.0).collect::<Vec<_>>());
    let h = x.cast(DType::F16)?.to_vec_f64()?;
    assert_eq!(h[13], f64::INFINITY, "70000 overflows f16");
    assert_eq!(x.cast(DType::BF16)?.to_vec_f64()?[13], 70144.0, "bf16 rounds 70000 to nearest");
    // Through f32 and f16 first, then to integers: same saturation.
    let via = x.cast(DType::F16)?.cast(DType::U8)?.to_vec::<u8>()?;
    assert_eq!(via[12], 255);
    check("f64 -> f16 -> u8", &x.cast(DType::F16)?.cast(DType::U8)?)?;
    check("f64 -> f32 -> i32 -> bool -> f16", &x.cast(DType::F32)?.cast(DType::I32)?.cast(DType::Bool)?.cast(DType::F16)?)?;
    Ok(())
}

#[test]
fn cast_chain_fused_with_arithmetic_rounds_at_each_cast() -> Result<()> {
    let d = dev!();
    let x = randn(&N, 12, DType::F32, &d)?;
    // (x * 100) -> i32 truncates, -> f16, + 0.3, -> u8 saturates.
    let y = x.mul_scalar(100.0)?.cast(DType::I32)?.cast(DType::F16)?.add_scalar(0.3)?.cast(DType::U8)?;
    check("fused cast chain", &y)?;
    let z = x.cast(DType::BF16)?.mul_scalar(3.0)?.cast(DType::F32)?;
    // The fast path keeps the bf16 product of a fused kernel in f32, the
    // reference rounds it to bf16: the chain is as precise as bf16.
    check_tol("bf16 roundtrip in chain", &z, Tol::of(DType::BF16).ops(2))?;
    Ok(())
}
