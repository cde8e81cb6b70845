// Property tests: random shapes, views and op chains, fast path vs reference.

use proptest::prelude::*;

fn cfg() -> ProptestConfig {
    ProptestConfig { cases: 64, max_shrink_iters: 256, ..ProptestConfig::default() }
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..6, 0..=4)
}

fn float_dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(vec![DType::F64, DType::F32, DType::F16, DType::BF16])
}

/// A random view of a fresh tensor whose logical shape is `shape`:
/// `kind` picks contiguous, transposed (permuted storage), narrowed from a
/// larger storage, or expanded from size-1 axes.
fn view_of(shape: &[usize], kind: u8, seed: u64, dtype: DType, d: &Device) -> Result<Tensor> {
    let rank = shape.len();
    match kind % 4 {
        1 if rank >= 2 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let axes: Vec<usize> = (0..rank).rev().collect();
            randn(&rev, seed, dtype, d)?.permute(&axes)
        }
        2 if rank >= 1 => {
            let mut big = shape.to_vec();
            big[0] += 3;
            randn(&big, seed, dtype, d)?.narrow(0, 2, shape[0])
        }
        3 if rank >= 1 => {
            let small: Vec<usize> = shape.iter().enumerate().map(|(i, &s)| if i % 2 == 0 { 1 } else { s }).collect();
            randn(&small, seed, dtype, d)?.expand(shape.to_vec())
        }
        _ => randn(shape, seed, dtype, d),
    }
}

/// A broadcast partner of `shape`: some axes set to 1, some leading axes dropped.
fn partner_shape(shape: &[usize], mask: u8, drop: usize) -> Vec<usize> {
    let s: Vec<usize> = shape.iter().enumerate().map(|(i, &v)| if mask >> i & 1 == 1 { 1 } else { v }).collect();
    s[drop.min(s.len())..].to_vec()
}

/// Applies op `code` to `x` (with `y` for binary ops). Every op keeps values
/// in a range where f16 does not overflow and no domain edge is hit (so NaN
/// versus number cannot come from rounding differences).
fn apply(code: u8, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    match code % 16 {
        0 => x.neg(),
        1 => x.abs(),
        2 => x.tanh()?.exp(),
        3 => x.sin(),
        4 => x.cos(),
        5 => x.sigmoid(),
        6 => x.relu(),
        7 => x.silu(),
        8 => x.gelu(),
        9 => x.abs()?.add_scalar(1.0)?.sqrt(),
        10 => x.add(y),
        11 => x.sub(y),
        12 => x.mul(y)?.tanh(),
        13 => x.maximum(y),
        14 => x.minimum(y),
        _ => x.abs()?.add_scalar(1.0)?.log(),
    }
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn random_elementwise_chains_on_random_views_match_reference(
        shape in shape_strategy(),
        kinds in (0u8..4, 0u8..4),
        mask in 0u8..16,
        drop in 0usize..3,
        ops in prop::collection::vec(0u8..16, 1..=8),
        dtype in float_dtype(),
        seed in 0u64..1000,
    ) {
        let d = dev!();
        if !supports(&d, dtype) {
            assert_unsupported(&d, dtype);
            return Ok(());
        }
        let x = view_of(&shape, kinds.0, seed, dtype, &d).unwrap();
        let ps = partner_shape(&shape, mask, drop);
        let y = view_of(&ps, kinds.1, seed + 1, dtype, &d).unwrap();
        let mut t = x;
        for &op in &ops {
            t = apply(op, &t, &y).unwrap();
        }
        prop_assert_eq!(t.shape(), &shape[..]);
        // Each op may add a rounding difference; the composites (tanh-exp,
        // sqrt/log of |x|+1, tanh of a product) have up to 3 roundings.
        let tol = Tol::of(dtype).ops(3 * ops.len());
        let r = try_check(&format!("chain {ops:?} on {shape:?} ({dtype}) views {kinds:?}"), &t, tol);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn random_binary_broadcasts_match_reference(
        shape in shape_strategy(),
        mask in 0u8..16,
        drop in 0usize..3,
        swap in any::<bool>(),
        op in 10u8..15,
        dtype in float_dtype(),
        seed in 0u64..1000,
    ) {
        let d = dev!();
        if !supports(&d, dtype) {
            assert_unsupported(&d, dtype);
            return Ok(());
        }
        let a = randn(&shape, seed, dtype, &d).unwrap();
        let b = randn(&partner_shape(&shape, mask, drop), seed + 7, dtype, &d).unwrap();
        let t = if swap { apply(op, &b, &a).unwrap() } else { apply(op, &a, &b).unwrap() };
        prop_assert_eq!(t.shape(), &shape[..]);
        let r = try_check(&format!("binary {op} {shape:?} mask {mask} drop {drop}"), &t, Tol::of(dtype).ops(2));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn random_reductions_over_random_axis_sets_match_reference(
        shape in prop::collection::vec(1usize..6, 1..=4),
        axis_mask in 0u8..16,
        keepdim in any::<bool>(),
        kind in 0u8..4,
        op in 0u8..5,
        dtype in float_dtype(),
        seed in 0u64..1000,
    ) {
        let d = dev!();
        if !supports(&d, dtype) {
            assert_unsupported(&d, dtype);
            return Ok(());
        }
        let x = view_of(&shape, kind, seed, dtype, &d).unwrap();
        let axes: Vec<isize> = (0..shape.len()).filter(|i| axis_mask >> i & 1 == 1).map(|i| i as isize).collect();
        let n: usize = if axes.is_empty() { shape.iter().product() } else { axes.iter().map(|&a| shape[a as usize]).product() };
        let (t, ops) = match op {
            0 => (x.sum(&axes, keepdim).unwrap(), 1),
            1 => (x.max(&axes, keepdim).unwrap(), 1),
            2 => (x.min(&axes, keepdim).unwrap(), 1),
            3 => (x.mean(&axes, keepdim).unwrap(), 2),
            _ => (x.var(&axes, 1, keepdim).unwrap(), 5),
        };
        let r = try_check(&format!("reduce {op} axes {axes:?} of {shape:?} view {kind}"), &t, Tol::of(dtype).ops(ops).reduce(n));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn random_permute_narrow_expand_views_read_the_right_elements(
        shape in prop::collection::vec(1usize..6, 1..=4),
        perm_seed in any::<u64>(),
        narrow_axis in 0usize..4,
        start in 0usize..3,
    ) {
        let d = dev!();
        let n: usize = shape.iter().product();
        let base = Tensor::arange(0.0, n as f64, 1.0, DType::F32, &d).unwrap().reshape(shape.clone()).unwrap();
        base.realize().unwrap();
        let mut axes: Vec<usize> = (0..shape.len()).collect();
        let mut s = perm_seed;
        for i in (1..axes.len()).rev() {
            axes.swap(i, (s % (i as u64 + 1)) as usize);
            s /= 7;
        }
        let p = base.permute(&axes).unwrap();
        let ax = narrow_axis % shape.len();
        let size = p.shape()[ax];
        let st = start.min(size - 1);
        let v = p.narrow(ax as isize, st, size - st).unwrap().unsqueeze(0).unwrap();
        let mut big = v.shape().to_vec();
        big[0] = 2;
        let e = v.expand(big).unwrap();
        let r = try_check("views", &e.add_scalar(0.0).unwrap(), Tol::of(DType::F32));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
        // to_vec of the view itself (no kernel) agrees with the reference too.
        let want: Vec<f64> = reference::evaluate(&e).unwrap().iter().copied().collect();
        prop_assert_eq!(e.to_vec_f64().unwrap(), want);
    }

    #[test]
    fn random_matmul_shapes_match_reference(
        m in 0usize..6, k in 0usize..6, n in 0usize..6,
        batch in prop::collection::vec(1usize..3, 0..=2),
        ta in any::<bool>(), tb in any::<bool>(),
        dtype in float_dtype(),
        seed in 0u64..1000,
    ) {
        let d = dev!();
        if !supports(&d, dtype) {
            assert_unsupported(&d, dtype);
            return Ok(());
        }
        let mk = |r: usize, c: usize, t: bool, s: u64| -> Tensor {
            let mut sh = batch.clone();
            if t { sh.extend([c, r]); randn(&sh, s, dtype, &d).unwrap().t().unwrap() } else { sh.extend([r, c]); randn(&sh, s, dtype, &d).unwrap() }
        };
        let a = mk(m, k, ta, seed);
        let b = mk(k, n, tb, seed + 1);
        let y = a.matmul(&b).unwrap();
        let r = try_check(&format!("matmul {batch:?} {m}x{k}x{n} ta {ta} tb {tb}"), &y, Tol::of(dtype).reduce(k));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}
