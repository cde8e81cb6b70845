//! Random programs on the lazy graph, CPU fast path against the f64 reference.
//!
//! The fuzz input decodes (through `arbitrary::Unstructured`) into 1..=3 f32
//! inputs of random shapes (rank 0..=4, sizes 0..=8, at most 4096 elements,
//! some of them non-contiguous `as_strided` views of a larger buffer) and up
//! to 20 steps, each a view (reshape, permute, transpose, narrow, expand,
//! squeeze/unsqueeze, `as_strided` with random strides and offset,
//! contiguous, index_select, gather, concat) or an op (elementwise unary and
//! binary, where, reductions, argmax, var, softmax, log_softmax, layer_norm,
//! matmul) on values picked from a pool. Arguments are random and often
//! invalid on purpose.
//!
//! Properties:
//! 1. building a graph returns `Ok` or an `Err` (never panics; the error's
//!    message is formatted too);
//! 2. every value of the pool evaluates on the reference path and realizes
//!    on the CPU fast path alike: both `Err` or both `Ok` with the same shape;
//! 3. when both are `Ok`, each element agrees within the stated tolerance:
//!    both NaN, or equal infinities, or `|fast - reference| <= 2 * err`.
//!
//! The tolerance (`err`) is derived, not tuned. Inputs are exact f32 values
//! on a 1/16 grid in [-1, 1] (an occasional NaN), so they carry no error.
//! Each value carries a bound `mag` on its magnitude and a bound `err` on
//! `|computed - exact|` that holds for *either* implementation (the fast
//! path fuses chains in f32 with few-ulp transcendentals and 8-lane f32
//! partial sums; the reference computes each op in f64 and rounds it to f32):
//! - an op with Lipschitz constant `L` on `[-mag, mag]` maps `err` to
//!   `L * err` plus its own rounding, a few units of `u = 2^-24` times the
//!   result's magnitude (16 for transcendentals: libm and the fast `exp`
//!   are within 4 ulp);
//! - a sum over `n` elements adds `(n / 8 + 2) * u * n * mag` (the worst
//!   case of a lane of `n / 8` sequential f32 additions), a matmul over `k`
//!   adds `(k + 2) * u * k * mag_a * mag_b`;
//! - softmax, log_softmax and layer_norm use the bounds of their Jacobians
//!   (1/2, 2, and the expression in `layer_norm_err` with `eps >= 1/2`).
//!
//! After every step a value whose `mag` exceeds 2 is scaled by a power of
//! two (exact in binary floating point), so magnitudes stay O(1), errors
//! are never amplified by more than a small constant per step, and the
//! tolerance stays far below the O(1) differences a wrong index, stride or
//! fusion produces. Predicates (`gt`, `where`, `argmax`) only read values
//! with `err == 0`, because a comparison near a tie is discontinuous: there
//! a legitimate rounding difference would flip the outcome. No op divides by
//! a value near zero, takes a log or square root near zero, or subtracts
//! nearly equal large numbers, so cancellation cannot turn a small absolute
//! error into a large one: the error bounds are absolute and stay valid.
//!
//! `FUSEGRAPH_FUZZ_TRACE=1` prints every step as it is built (to turn a
//! crash into a regression test).

#![no_main]

use arbitrary::{Result as AResult, Unstructured};
use fusegraph_core::backend::cpu::reference;
use fusegraph_core::{DType, Device, Error, Tensor};
use libfuzzer_sys::fuzz_target;

/// Largest element count of any value kept in the pool.
const MAX_ELEMS: usize = 4096;
/// Largest number of values in the pool.
const MAX_POOL: usize = 24;
/// Unit roundoff of f32.
const U: f64 = 1.0 / 16_777_216.0;

#[derive(Clone)]
struct Val {
    t: Tensor,
    /// Bound on |value| (finite elements).
    mag: f64,
    /// Bound on |computed - exact| for either implementation.
    err: f64,
    name: String,
}

struct Ctx {
    pool: Vec<Val>,
    trace: bool,
    next: usize,
    dev: Device,
}

impl Ctx {
    fn log(&self, line: &str) {
        if self.trace {
            eprintln!("    {line}");
        }
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("t{}", self.next - 1)
    }

    /// Adds a result to the pool (dropping oversized ones), rescaled so that
    /// `mag <= 2`.
    fn push(&mut self, r: Result<Tensor, Error>, mag: f64, err: f64, code: String) {
        let t = match r {
            Ok(t) => t,
            Err(e) => {
                let msg = e.to_string();
                assert!(!msg.is_empty());
                self.log(&format!("// {code} -> Err({msg})"));
                return;
            }
        };
        if t.numel() > MAX_ELEMS || self.pool.len() >= MAX_POOL {
            return;
        }
        let name = self.fresh();
        self.log(&format!("let {name} = {code}?; // {:?}", t.shape()));
        let mut v = Val { t, mag, err, name };
        if v.mag > 2.0 && v.mag.is_finite() {
            let k = v.mag.log2().ceil();
            let f = (-k).exp2();
            match v.t.mul_scalar(f) {
                Ok(t) => {
                    let name = self.fresh();
                    self.log(&format!("let {name} = {}.mul_scalar({f:e})?;", v.name));
                    v = Val {
                        t,
                        mag: v.mag * f,
                        // Scaling by a power of two is exact unless it goes
                        // subnormal (below 2^-126, absolute error 2^-149).
                        err: v.err * f + 1e-44,
                        name,
                    };
                }
                Err(e) => panic!("mul_scalar by {f} failed: {e}"),
            }
        }
        self.pool.push(v);
    }

    fn pick(&self, u: &mut Unstructured) -> AResult<Val> {
        Ok(self.pool[u.choose_index(self.pool.len())?].clone())
    }
}

/// A grid value k/16 in [-1, 1] from a simple generator.
fn grid(state: &mut u64) -> f32 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    ((*state >> 33) % 33) as f32 / 16.0 - 1.0
}

fn grid_vec(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed;
    (0..n).map(|_| grid(&mut s)).collect()
}

fn small_shape(u: &mut Unstructured, max_rank: usize, max_dim: usize) -> AResult<Vec<usize>> {
    let rank = u.int_in_range(0..=max_rank)?;
    let mut dims = Vec::with_capacity(rank);
    let mut n = 1usize;
    for _ in 0..rank {
        let d = u.int_in_range(0..=max_dim)?;
        let d = if n * d.max(1) > MAX_ELEMS { 1 } else { d };
        n *= d.max(1);
        dims.push(d);
    }
    Ok(dims)
}

fn axis(u: &mut Unstructured, rank: usize) -> AResult<isize> {
    // Mostly in range, sometimes one past either end (must be an Err).
    let r = rank as isize;
    u.int_in_range(-r - 1..=r)
}

fn axes(u: &mut Unstructured, rank: usize) -> AResult<Vec<isize>> {
    let n = u.int_in_range(0..=rank.min(4))?;
    (0..n).map(|_| axis(u, rank)).collect()
}

/// The number of elements a reduction over `axes` reads per output (after
/// the same normalisation the library does; `None` when the axes are invalid).
fn reduced_count(shape: &[usize], axes: &[isize]) -> usize {
    let rank = shape.len() as isize;
    if axes.is_empty() {
        return shape.iter().product();
    }
    let mut seen = Vec::new();
    for &a in axes {
        let a = if a < 0 { a + rank } else { a };
        if (0..rank).contains(&a) && !seen.contains(&a) {
            seen.push(a);
        }
    }
    seen.iter().map(|&a| shape[a as usize]).product()
}

fn sum_err(n: f64, mag: f64, err: f64) -> (f64, f64) {
    (n * mag, n * err + (n / 8.0 + 2.0) * U * n * mag)
}

fn ulps(c: f64, mag: f64) -> f64 {
    c * U * mag.max(1.0)
}

/// Error bound of layer_norm over `n` elements per row with `eps`, for an
/// input bounded by `mag` with error `err`, before weight and bias.
fn layer_norm_err(n: f64, mag: f64, err: f64, eps: f64) -> (f64, f64) {
    let s_min = eps.sqrt();
    let d = 2.0 * mag; // |x - mean|
    let mean_err = err + (n / 8.0 + 3.0) * U * mag;
    let dev_err = err + mean_err + U * d;
    let var_err = 2.0 * d * dev_err + dev_err * dev_err + (n / 8.0 + 4.0) * U * d * d;
    // d sqrt(v + eps) <= dv / (2 sqrt(eps)); rsqrt likewise, relative.
    let s_err = var_err / (2.0 * s_min) + 4.0 * U * (d * d + eps).sqrt();
    let y_mag = d / s_min;
    let y_err = dev_err / s_min + d * s_err / (s_min * s_min) + ulps(4.0, y_mag);
    (y_mag, y_err)
}

fn input(ctx: &mut Ctx, u: &mut Unstructured) -> AResult<()> {
    let shape = small_shape(u, 4, 8)?;
    let n: usize = shape.iter().product();
    let seed: u64 = u.arbitrary()?;
    let mut vals = grid_vec(seed, n.max(1));
    if u.ratio(1, 8)? {
        let i = u.choose_index(vals.len())?;
        vals[i] = f32::NAN;
    }
    let name = ctx.fresh();
    let strided = u.ratio(1, 3)?;
    if !strided {
        vals.truncate(n);
        ctx.log(&format!(
            "let {name} = Tensor::from_vec(grid_vec({seed}, {n}), {shape:?}, &dev)?;"
        ));
        let t = Tensor::from_vec(vals, shape.clone(), &ctx.dev).expect("from_vec");
        ctx.pool.push(Val {
            t,
            mag: 1.0,
            err: 0.0,
            name,
        });
        return Ok(());
    }
    // A realized strided view over a larger buffer.
    let len = u.int_in_range(1..=MAX_ELEMS)?;
    let buf = grid_vec(seed, len);
    let strides: Vec<isize> = (0..shape.len())
        .map(|_| u.int_in_range(-6isize..=6))
        .collect::<AResult<_>>()?;
    let offset = u.int_in_range(0..=len)?;
    ctx.log(&format!(
        "let {name} = Tensor::from_vec(grid_vec({seed}, {len}), [{len}], &dev)?.as_strided(&{shape:?}, &{strides:?}, {offset}); // may be Err"
    ));
    let base = Tensor::from_vec(buf, [len], &ctx.dev).expect("from_vec");
    match base.as_strided(&shape, &strides, offset) {
        Ok(t) => ctx.pool.push(Val {
            t,
            mag: 1.0,
            err: 0.0,
            name,
        }),
        Err(e) => {
            assert!(!e.to_string().is_empty());
            // Keep the buffer itself so the program goes on.
            ctx.pool.push(Val {
                t: base,
                mag: 1.0,
                err: 0.0,
                name,
            });
        }
    }
    Ok(())
}

fn reshape_target(u: &mut Unstructured, shape: &[usize]) -> AResult<Vec<usize>> {
    let n: usize = shape.iter().product();
    match u.int_in_range(0..=3u8)? {
        // Arbitrary dims: usually an Err.
        0 => small_shape(u, 4, 8),
        // One inferred axis.
        1 => {
            let mut t = small_shape(u, 3, 8)?;
            let at = u.int_in_range(0..=t.len())?;
            t.insert(at, usize::MAX);
            Ok(t)
        }
        // A factorisation of n.
        _ => {
            let mut rest = n;
            let mut t = Vec::new();
            let rank = u.int_in_range(0..=4usize)?;
            for _ in 0..rank.saturating_sub(1) {
                let divs: Vec<usize> = (1..=rest.clamp(1, 16))
                    .filter(|d| rest == 0 || rest % d == 0)
                    .collect();
                let d = *u.choose(&divs)?;
                t.push(d);
                rest = if d == 0 { 0 } else { rest / d };
            }
            if rank > 0 {
                t.push(rest);
            } else if n != 1 {
                t.push(n);
            }
            Ok(t)
        }
    }
}

fn step(ctx: &mut Ctx, u: &mut Unstructured) -> AResult<()> {
    let a = ctx.pick(u)?;
    let an = a.name.clone();
    let shape = a.t.shape().to_vec();
    let rank = shape.len();
    let (ma, ea) = (a.mag, a.err);
    let op = u.int_in_range(0..=45u8)?;
    macro_rules! un {
        ($m:ident, $mag:expr, $err:expr) => {
            ctx.push(a.t.$m(), $mag, $err, format!("{an}.{}()", stringify!($m)))
        };
    }
    match op {
        0 => un!(neg, ma, ea),
        1 => un!(abs, ma, ea),
        2 => un!(relu, ma, ea),
        3 => un!(tanh, ma.min(1.0), ea + ulps(8.0, 1.0)),
        4 => un!(sin, ma.min(1.0), ea + ulps(8.0, 1.0)),
        5 => un!(cos, 1.0, ea + ulps(8.0, 1.0)),
        6 => un!(sigmoid, 1.0, 0.25 * ea + ulps(16.0, 1.0)),
        7 => un!(silu, ma, 1.1 * ea + ulps(16.0, ma)),
        8 => un!(gelu, ma, 1.13 * ea + ulps(16.0, ma)),
        9 => un!(gelu_tanh, ma, 1.13 * ea + ulps(16.0, ma)),
        10 => {
            let m = ma.exp();
            un!(exp, m, m * ea + ulps(8.0, m))
        }
        11 => {
            let lo = grid(&mut u.arbitrary()?) as f64;
            let hi = grid(&mut u.arbitrary()?) as f64;
            ctx.push(a.t.clamp(lo, hi), ma, ea, format!("{an}.clamp({lo}, {hi})"));
        }
        12 => {
            // log(sigmoid(x)): the log reads values in [sigmoid(-mag), 1).
            let m = (1.0 + ma.exp()).ln();
            let e = ea + 16.0 * U * (1.0 + ma.exp()) + ulps(8.0, m);
            ctx.push(
                a.t.sigmoid().and_then(|s| s.log()),
                m,
                e,
                format!("{an}.sigmoid()?.log()"),
            );
        }
        13 => ctx.push(
            a.t.mul(&a.t),
            ma * ma,
            2.0 * ma * ea + ea * ea + ulps(1.0, ma * ma),
            format!("{an}.mul(&{an})"),
        ),
        14 => {
            let s = grid(&mut u.arbitrary()?) as f64;
            let m = s.abs() * ma;
            ctx.push(
                a.t.mul_scalar(s),
                m,
                s.abs() * ea + ulps(1.0, m),
                format!("{an}.mul_scalar({s})"),
            );
        }
        15 => {
            let s = grid(&mut u.arbitrary()?) as f64;
            let m = s.abs() + ma;
            ctx.push(
                a.t.add_scalar(s),
                m,
                ea + ulps(1.0, m),
                format!("{an}.add_scalar({s})"),
            );
        }
        16..=22 => {
            let b = ctx.pick(u)?;
            let bn = b.name.clone();
            let (mb, eb) = (b.mag, b.err);
            let (r, m, e, code) = match op {
                16 => {
                    let m = ma + mb;
                    (a.t.add(&b.t), m, ea + eb + ulps(1.0, m), "add")
                }
                17 => {
                    let m = ma + mb;
                    (a.t.sub(&b.t), m, ea + eb + ulps(1.0, m), "sub")
                }
                18 => {
                    let m = ma * mb;
                    let e = ea * mb + eb * ma + ea * eb + ulps(1.0, m);
                    (a.t.mul(&b.t), m, e, "mul")
                }
                19 => (a.t.maximum(&b.t), ma.max(mb), ea.max(eb), "maximum"),
                20 => (a.t.minimum(&b.t), ma.max(mb), ea.max(eb), "minimum"),
                21 => {
                    // a / (|b| + 1): the denominator is at least 1.
                    let r =
                        b.t.abs()
                            .and_then(|d| d.add_scalar(1.0))
                            .and_then(|d| a.t.div(&d));
                    let e = ea + ma * eb + ea * eb + ulps(4.0, ma.max(1.0 + mb));
                    ctx.push(r, ma, e, format!("{an}.div(&{bn}.abs()?.add_scalar(1.0)?)"));
                    return Ok(());
                }
                _ => {
                    // where(c > d, a, b) with c, d exact.
                    let exact: Vec<Val> =
                        ctx.pool.iter().filter(|v| v.err == 0.0).cloned().collect();
                    if exact.is_empty() {
                        return Ok(());
                    }
                    let c = &exact[u.choose_index(exact.len())?];
                    let d = &exact[u.choose_index(exact.len())?];
                    let r =
                        c.t.gt(&d.t)
                            .and_then(|cond| Tensor::where_cond(&cond, &a.t, &b.t));
                    let code = format!(
                        "Tensor::where_cond(&{}.gt(&{})?, &{an}, &{bn})",
                        c.name, d.name
                    );
                    ctx.push(r, ma.max(mb), ea.max(eb), code);
                    return Ok(());
                }
            };
            ctx.push(r, m, e, format!("{an}.{code}(&{bn})"));
        }
        23..=26 => {
            let ax = axes(u, rank)?;
            let keep: bool = u.arbitrary()?;
            let n = reduced_count(&shape, &ax) as f64;
            match op {
                23 => {
                    let (m, e) = sum_err(n, ma, ea);
                    ctx.push(
                        a.t.sum(&ax, keep),
                        m,
                        e,
                        format!("{an}.sum(&{ax:?}, {keep})"),
                    );
                }
                24 => ctx.push(
                    a.t.mean(&ax, keep),
                    ma,
                    ea + (n / 8.0 + 3.0) * U * ma.max(1.0),
                    format!("{an}.mean(&{ax:?}, {keep})"),
                ),
                25 => ctx.push(
                    a.t.max(&ax, keep),
                    ma,
                    ea,
                    format!("{an}.max(&{ax:?}, {keep})"),
                ),
                _ => ctx.push(
                    a.t.min(&ax, keep),
                    ma,
                    ea,
                    format!("{an}.min(&{ax:?}, {keep})"),
                ),
            }
        }
        27 => {
            if ea != 0.0 {
                return Ok(());
            }
            let ax = if u.arbitrary()? {
                Some(axis(u, rank)?)
            } else {
                None
            };
            let keep: bool = u.arbitrary()?;
            let n = match ax {
                Some(x) => reduced_count(&shape, &[x]),
                None => shape.iter().product(),
            };
            ctx.push(
                a.t.argmax(ax, keep).and_then(|i| i.cast(DType::F32)),
                n as f64,
                0.0,
                format!("{an}.argmax({ax:?}, {keep})?.cast(DType::F32)"),
            );
        }
        28 => {
            let ax = axes(u, rank)?;
            let keep: bool = u.arbitrary()?;
            let n = reduced_count(&shape, &ax);
            let corr = usize::from(n >= 2 && u.arbitrary::<bool>()?);
            let nf = n as f64;
            let denom = (n - corr).max(1) as f64;
            let d = 2.0 * ma;
            let dd = 2.0 * ea + (nf / 8.0 + 3.0) * U * ma.max(1.0);
            let m = d * d * nf / denom;
            let e = (nf / denom) * (2.0 * d * dd + dd * dd + (nf / 8.0 + 3.0) * U * d * d)
                + ulps(2.0, m);
            ctx.push(
                a.t.var(&ax, corr, keep),
                m,
                e,
                format!("{an}.var(&{ax:?}, {corr}, {keep})"),
            );
        }
        29 => {
            let x = axis(u, rank)?;
            let n = reduced_count(&shape, &[x]) as f64;
            ctx.push(
                a.t.softmax(x),
                1.0,
                0.5 * ea + (n / 8.0 + 12.0 + 2.0 * ma) * U,
                format!("{an}.softmax({x})"),
            );
        }
        30 => {
            let x = axis(u, rank)?;
            let n = reduced_count(&shape, &[x]) as f64;
            let m = 2.0 * ma + n.max(1.0).ln();
            ctx.push(
                a.t.log_softmax(x),
                m,
                2.0 * ea + (n / 8.0 + 16.0 + 4.0 * ma) * U * m.max(1.0),
                format!("{an}.log_softmax({x})"),
            );
        }
        31 => {
            let nd = u.int_in_range(0..=rank + 1)?;
            let eps = *u.choose(&[0.5, 1.0])?;
            let tail: Vec<usize> = shape[rank - nd.min(rank)..].to_vec();
            let n: usize = tail.iter().product();
            let (mut m, mut e) = layer_norm_err(n as f64, ma, ea, eps);
            let seed: u64 = u.arbitrary()?;
            let w = if u.arbitrary()? {
                Some(Tensor::from_vec(grid_vec(seed, n), tail.clone(), &ctx.dev).expect("weight"))
            } else {
                None
            };
            let b = if u.arbitrary()? {
                Some(Tensor::from_vec(grid_vec(seed ^ 1, n), tail.clone(), &ctx.dev).expect("bias"))
            } else {
                None
            };
            if w.is_some() {
                e += ulps(1.0, m);
            }
            if b.is_some() {
                m += 1.0;
                e += ulps(1.0, m);
            }
            let code = format!(
                "{an}.layer_norm({nd}, {}, {}, {eps})",
                w.as_ref().map_or("None".into(), |_| format!(
                    "Some(&grid_vec({seed}, {n}) as {tail:?})"
                )),
                b.as_ref().map_or("None".into(), |_| format!(
                    "Some(&grid_vec({}, {n}) as {tail:?})",
                    seed ^ 1
                )),
            );
            ctx.push(a.t.layer_norm(nd, w.as_ref(), b.as_ref(), eps), m, e, code);
        }
        32 | 33 => {
            let b = ctx.pick(u)?;
            let (bt, bcode) = if op == 33 {
                match b.t.t() {
                    Ok(t) => (t, format!("&{}.t()?", b.name)),
                    Err(_) => return Ok(()),
                }
            } else {
                (b.t.clone(), format!("&{}", b.name))
            };
            let k = shape.last().copied().unwrap_or(0) as f64;
            let m = k * ma * b.mag;
            let e = k * (ea * b.mag + b.err * ma + ea * b.err) + (k + 2.0) * U * m;
            ctx.push(a.t.matmul(&bt), m, e, format!("{an}.matmul({bcode})"));
        }
        // Views: exact, same bounds.
        34 => {
            let target = reshape_target(u, &shape)?;
            ctx.push(
                a.t.reshape(target.clone()),
                ma,
                ea,
                format!("{an}.reshape({target:?})"),
            );
        }
        35 => {
            let mut perm: Vec<usize> = (0..rank).collect();
            for i in (1..rank).rev() {
                let j = u.int_in_range(0..=i)?;
                perm.swap(i, j);
            }
            if u.ratio(1, 8)? && rank > 0 {
                perm[0] = u.int_in_range(0..=rank)?;
            }
            ctx.push(
                a.t.permute(&perm),
                ma,
                ea,
                format!("{an}.permute(&{perm:?})"),
            );
        }
        36 => {
            if u.arbitrary()? {
                ctx.push(a.t.t(), ma, ea, format!("{an}.t()"));
            } else {
                let (x, y) = (axis(u, rank)?, axis(u, rank)?);
                ctx.push(
                    a.t.transpose(x, y),
                    ma,
                    ea,
                    format!("{an}.transpose({x}, {y})"),
                );
            }
        }
        37 => {
            let x = axis(u, rank)?;
            let size = reduced_count(&shape, &[x]);
            let start = u.int_in_range(0..=size + 1)?;
            let len = u.int_in_range(0..=size + 1)?;
            ctx.push(
                a.t.narrow(x, start, len),
                ma,
                ea,
                format!("{an}.narrow({x}, {start}, {len})"),
            );
        }
        38 => {
            let lead = u.int_in_range(0..=2usize)?;
            let mut target: Vec<usize> = (0..lead)
                .map(|_| u.int_in_range(0..=4usize))
                .collect::<AResult<_>>()?;
            for &d in &shape {
                target.push(if d == 1 || u.ratio(1, 16)? {
                    u.int_in_range(0..=5usize)?
                } else {
                    d
                });
            }
            let code = format!("{an}.broadcast_to({target:?})");
            let r = if u.arbitrary()? {
                a.t.expand(target)
            } else {
                a.t.broadcast_to(target)
            };
            ctx.push(r, ma, ea, code);
        }
        39 => {
            let x = axis(u, rank + 1)?;
            if u.arbitrary()? {
                ctx.push(a.t.unsqueeze(x), ma, ea, format!("{an}.unsqueeze({x})"));
            } else {
                ctx.push(a.t.squeeze(x), ma, ea, format!("{an}.squeeze({x})"));
            }
        }
        40 => {
            let s = small_shape(u, 4, 6)?;
            let strides: Vec<isize> = (0..s.len() + usize::from(u.ratio(1, 16)?))
                .map(|_| {
                    if u.ratio(1, 32)? {
                        u.choose(&[isize::MAX, isize::MIN, isize::MAX / 2, -(isize::MAX / 3)])
                            .copied()
                    } else {
                        u.int_in_range(-8isize..=8)
                    }
                })
                .collect::<AResult<_>>()?;
            let span = a.t.node().storage_len;
            let offset = if u.ratio(1, 32)? {
                usize::MAX - u.int_in_range(0..=4usize)?
            } else {
                u.int_in_range(0..=span + 2)?
            };
            ctx.push(
                a.t.as_strided(&s, &strides, offset),
                ma,
                ea,
                format!("{an}.as_strided(&{s:?}, &{strides:?}, {offset})"),
            );
        }
        41 => ctx.push(a.t.contiguous(), ma, ea, format!("{an}.contiguous()")),
        42 | 43 => {
            let x = axis(u, rank)?;
            let size = reduced_count(&shape, &[x]) as i32;
            let len = u.int_in_range(0..=6usize)?;
            let idx: Vec<i32> = (0..len)
                .map(|_| u.int_in_range(-size - 1..=size))
                .collect::<AResult<_>>()?;
            if op == 42 {
                let i = Tensor::from_vec(idx.clone(), [len], &ctx.dev).expect("index");
                ctx.push(
                    a.t.index_select(x, &i),
                    ma,
                    ea,
                    format!(
                        "{an}.index_select({x}, &Tensor::from_vec(vec!{idx:?}, [{len}], &dev)?)"
                    ),
                );
            } else {
                // gather: an index of the source's shape with `len` on the axis.
                let mut ishape = shape.clone();
                let xa = if x < 0 { x + rank as isize } else { x };
                if (0..rank as isize).contains(&xa) {
                    ishape[xa as usize] = len;
                }
                let n: usize = ishape.iter().product();
                if n > MAX_ELEMS {
                    return Ok(());
                }
                let seed: u64 = u.arbitrary()?;
                let mut s = seed;
                let vals: Vec<i32> = (0..n)
                    .map(|_| {
                        let g = grid(&mut s);
                        ((g + 1.0) * 16.0) as i32 % (size + 2) - 1
                    })
                    .collect();
                let i = Tensor::from_vec(vals, ishape.clone(), &ctx.dev).expect("index");
                ctx.push(
                    a.t.gather(x, &i),
                    ma,
                    ea,
                    format!("{an}.gather({x}, <index {ishape:?} from seed {seed}>)"),
                );
            }
        }
        44 => {
            let b = ctx.pick(u)?;
            let x = axis(u, rank)?;
            ctx.push(
                Tensor::concat(&[&a.t, &b.t], x),
                ma.max(b.mag),
                ea.max(b.err),
                format!("Tensor::concat(&[&{an}, &{}], {x})", b.name),
            );
        }
        _ => {
            // where with a scalar-threshold condition on an exact value.
            if ea != 0.0 {
                return Ok(());
            }
            let b = ctx.pick(u)?;
            let s = grid(&mut u.arbitrary()?) as f64;
            let r =
                a.t.gt_scalar(s)
                    .and_then(|c| Tensor::where_cond(&c, &a.t, &b.t));
            ctx.push(
                r,
                ma.max(b.mag),
                ea.max(b.err),
                format!(
                    "Tensor::where_cond(&{an}.gt_scalar({s})?, &{an}, &{})",
                    b.name
                ),
            );
        }
    }
    Ok(())
}

fn accepts(got: f64, want: f64, err: f64) -> bool {
    if got.is_nan() || want.is_nan() {
        return got.is_nan() && want.is_nan();
    }
    if got.is_infinite() || want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= 2.0 * err
}

fn run(data: &[u8]) -> AResult<()> {
    let mut u = Unstructured::new(data);
    let mut ctx = Ctx {
        pool: Vec::new(),
        trace: std::env::var_os("FUSEGRAPH_FUZZ_TRACE").is_some(),
        next: 0,
        dev: Device::Cpu,
    };
    for _ in 0..u.int_in_range(1..=3u8)? {
        input(&mut ctx, &mut u)?;
    }
    let steps = u.int_in_range(1..=20u8)?;
    for _ in 0..steps {
        if u.is_empty() {
            break;
        }
        step(&mut ctx, &mut u)?;
    }
    let together: bool = u.arbitrary().unwrap_or(false);
    // The reference first: once realized, a tensor's graph is gone.
    let refs: Vec<_> = ctx.pool.iter().map(|v| reference::evaluate(&v.t)).collect();
    if together {
        let all: Vec<Tensor> = ctx.pool.iter().map(|v| v.t.clone()).collect();
        if let Err(e) = Tensor::realize_all(&all) {
            assert!(!e.to_string().is_empty());
        }
    }
    for (v, want) in ctx.pool.iter().zip(refs).rev() {
        let got = v.t.realize().and_then(|t| t.to_vec_f64());
        match (got, want) {
            (Err(_), Err(_)) => {}
            (Ok(_), Err(e)) => panic!("{}: fast path Ok, reference Err({e})", v.name),
            (Err(e), Ok(_)) => panic!("{}: fast path Err({e}), reference Ok", v.name),
            (Ok(got), Ok(want)) => {
                assert_eq!(want.shape(), v.t.shape(), "{}: reference shape", v.name);
                assert_eq!(got.len(), want.len(), "{}: element count", v.name);
                for (i, (&g, &w)) in got.iter().zip(want.iter()).enumerate() {
                    assert!(
                        accepts(g, w, v.err),
                        "{} {:?} element {i}: fast {g}, reference {w}, |diff| {:e} > 2 * err {:e}",
                        v.name,
                        v.t.shape(),
                        (g - w).abs(),
                        v.err
                    );
                }
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
