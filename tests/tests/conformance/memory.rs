// Buffer planning, deep graphs, the schedule cache, threads.

#[test]
fn fifty_step_matmul_relu_chain_reuses_a_few_buffers() -> Result<()> {
    let d = dev!();
    let w = randn(&[32, 32], 1, DType::F32, &d)?.mul_scalar(0.2)?;
    w.realize()?;
    let mut x = randn(&[16, 32], 2, DType::F32, &d)?;
    for _ in 0..50 {
        x = x.matmul(&w)?.relu()?;
    }
    let c = compiled(&x)?;
    assert_eq!(c.schedule.steps.len(), 50, "each step is one matmul kernel with a relu epilogue");
    let buf = (16 * 32 * 4) as u64;
    let plan = &c.schedule.plan;
    assert_eq!(plan.unplanned_intermediate_bytes, 49 * buf);
    assert!(plan.peak_intermediate_bytes <= 3 * buf, "peak {} bytes for {} byte buffers", plan.peak_intermediate_bytes, buf);
    check_tol("50 matmul+relu", &x, Tol::of(DType::F32).ops(50).reduce(32))?;
    Ok(())
}

#[test]
fn fifty_matmul_softmax_steps_reuse_a_few_buffers() -> Result<()> {
    // A matmul cannot take a softmax as its input inside one kernel, so every
    // step is a matmul kernel and a row kernel: 100 kernels, 99 intermediates.
    let d = dev!();
    let w = randn(&[32, 32], 3, DType::F32, &d)?;
    let mut x = randn(&[16, 32], 4, DType::F32, &d)?;
    for _ in 0..50 {
        x = x.matmul(&w)?.softmax(-1)?;
    }
    let c = compiled(&x)?;
    let buf = (16 * 32 * 4) as u64;
    let plan = &c.schedule.plan;
    assert_eq!(c.schedule.steps.len(), 100);
    assert_eq!(plan.unplanned_intermediate_bytes, 99 * buf);
    assert!(plan.peak_intermediate_bytes <= 3 * buf, "peak {} bytes for {} byte buffers", plan.peak_intermediate_bytes, buf);
    check_tol("50 matmul+softmax", &x, Tol::of(DType::F32).ops(100).reduce(32))?;
    Ok(())
}

#[test]
fn stacked_softmaxes_fuse_up_to_the_stage_cap_and_stay_correct() -> Result<()> {
    let d = dev!();
    let mut x = randn(&[8, 64], 5, DType::F32, &d)?;
    for _ in 0..4 {
        x = x.softmax(-1)?.mul_scalar(10.0)?;
    }
    // Four softmaxes are eight stages: one row kernel.
    assert_eq!(kernels(&x)?, 1);
    check_tol("4 stacked softmax", &x, Tol::of(DType::F32).ops(20).reduce(64))?;
    // Five would make ten stages, past the cap of eight that bounds the
    // per-element recomputation of earlier stages: the chain splits.
    let mut y = randn(&[8, 64], 6, DType::F32, &d)?;
    for _ in 0..5 {
        y = y.softmax(-1)?.mul_scalar(10.0)?;
    }
    let k = kernels(&y)?;
    assert!((2..=3).contains(&k), "{k} kernels for five stacked softmaxes");
    check_tol("5 stacked softmax", &y, Tol::of(DType::F32).ops(25).reduce(64))?;
    check_tol("5 stacked softmax", &x, Tol::of(DType::F32).ops(25).reduce(64))?;
    Ok(())
}

#[test]
fn ten_thousand_op_lazy_chain_realizes_without_stack_overflow() -> Result<()> {
    let d = dev!();
    // Every 50th op is a product with a 1x1 identity: matmul takes no fused
    // producer, so kernels stay at ~50 ops. (A pure 10,000-op elementwise
    // chain fuses into one kernel whose compile time is cubic in its length,
    // see `long_elementwise_chain_compiles_in_near_linear_time`.)
    let wd = wide(&d);
    let eye = Tensor::ones([1, 1], wd, &d)?;
    eye.realize()?;
    let mut x = randn(&[4, 1], 4, wd, &d)?;
    for i in 0..10_000 {
        x = match i % 50 {
            49 => x.matmul(&eye)?,
            k if k % 2 == 0 => x.add_scalar(1.0)?,
            _ => x.mul_scalar(0.5)?,
        };
    }
    // A block of 50 is y -> f^24(y) + 1 with f(y) = (y + 1) / 2, so
    // f^24(y) = 1 + (y - 1) / 2^24, and the fixed point solves
    // y = 2 + (y - 1) / 2^24.
    let e = 2f64.powi(-24);
    let fixed = (2.0 - e) / (1.0 - e);
    if wd == DType::F64 {
        let r = reference::evaluate(&x)?;
        assert!(r.iter().all(|&y| (y - fixed).abs() < 1e-12), "{r:?}");
        let v = x.to_vec::<f64>()?;
        assert!(v.iter().all(|&y| (y - fixed).abs() < 1e-12), "{v:?}");
    } else {
        // Without f64 the chain runs in f32, which rounds every op as the
        // reference (rounding each op to f32) does.
        check_tol("10,000-op chain", &x, Tol::of(wd).ops(4))?;
        let v = x.to_vec_f64()?;
        assert!(v.iter().all(|&y| Tol::of(wd).accepts(y, fixed)), "{v:?}");
    }
    Ok(())
}

#[test]
fn long_elementwise_chain_compiles_in_at_most_quadratic_time() -> Result<()> {
    // Repro for a compile-time bug: fusing an n-op elementwise chain into one
    // kernel cost O(n^3) (`Expr::push` deduplicated by a linear scan while
    // each fusion step re-imports the whole growing expression). 500 ops
    // took ~30 ms, 1000 ~170 ms, 2000 ~1.4 s, 10,000 ~160 s. The re-import
    // is still there, so the cost is quadratic: 2000 ops take about 13
    // times as long as 500 (308 and 24 ms on an H100 machine's host).
    // Compared as a ratio, so that a loaded machine slows both sides: four
    // times the ops may cost at most 32 times as long (quadratic: 16,
    // cubic: 64).
    let d = dev!();
    let compile = |n: usize| -> Result<std::time::Duration> {
        let mut x = randn(&[4], 5, wide(&d), &d)?;
        for i in 0..n {
            x = if i % 2 == 0 { x.add_scalar(1.0)? } else { x.mul_scalar(0.5)? };
        }
        let t = std::time::Instant::now();
        assert_eq!(kernels(&x)?, 1);
        Ok(t.elapsed())
    };
    compile(100)?; // opens the device and warms the caches outside the timings
    let (short, long) = (compile(500)?, compile(2000)?);
    assert!(
        long.as_secs_f64() < 32.0 * short.as_secs_f64().max(0.005),
        "compiling 2000 ops took {long:?}, 500 ops {short:?}"
    );
    Ok(())
}

#[test]
fn identical_structure_hits_the_schedule_cache() -> Result<()> {
    let d = dev!();
    let build = |seed: u64| -> Result<Tensor> {
        let a = randn(&[13, 17], seed, DType::F32, &d)?;
        let b = randn(&[17], seed + 1, DType::F32, &d)?;
        a.mul(&b)?.sin()?.add_scalar(0.123_456)?.softmax(-1)
    };
    let first = build(1)?;
    first.realize()?;
    let (hits, _) = fusegraph_core::runtime::cache_stats();
    let second = build(3)?;
    second.realize()?;
    let (hits2, _) = fusegraph_core::runtime::cache_stats();
    assert!(hits2 > hits, "hits {hits} -> {hits2}");
    // Same structure, different data: different results.
    assert_ne!(first.to_vec::<f32>()?, second.to_vec::<f32>()?);
    check_ops("cached schedule", &second, 6)?;
    Ok(())
}

#[test]
fn tensor_is_send_and_sync_and_four_threads_realize_at_once() -> Result<()> {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tensor>();
    let d = dev!();
    let shared = randn(&[64, 64], 5, DType::F32, &d)?;
    let lazy_shared = shared.mul_scalar(0.5)?.tanh()?; // realized by whichever thread gets there first
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let (s, l) = (shared.clone(), lazy_shared.clone());
            std::thread::spawn(move || -> Result<()> {
                for i in 0..5 {
                    let x = randn(&[64, 64], 10 * t + i, DType::F32, &d)?;
                    let y = x.matmul(&s)?.add(&l)?.relu()?.softmax(-1)?;
                    check_tol(&format!("thread {t} iteration {i}"), &y, Tol::of(DType::F32).ops(6).reduce(64))?;
                    let z = l.sum(&[], false)?;
                    check_tol("shared lazy", &z, Tol::of(DType::F32).ops(2).reduce(4096))?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread panicked")?;
    }
    Ok(())
}

#[test]
fn realize_all_computes_shared_work_once() -> Result<()> {
    let d = dev!();
    let x = randn(&[10, 10], 6, DType::F32, &d)?;
    let e = x.exp()?;
    let a = e.sum(&[0], false)?;
    let b = e.max(&[1], false)?;
    Tensor::realize_all(&[a.clone(), b.clone()])?;
    assert!(a.is_realized() && b.is_realized());
    check_tol("realize_all a", &a, Tol::of(DType::F32).ops(2).reduce(10))?;
    check("realize_all b", &b)?;
    Ok(())
}

/// `assign` writes into the buffer the destination already holds, for
/// every dtype the backend stores, from sources that are a whole buffer,
/// a slice at a word-aligned offset and a slice at an odd one (wgpu copies
/// whole 4-byte words: a u8, bool or 16-bit source there gets a buffer of
/// its own first); lengths that do not fill a word included.
#[test]
fn assign_writes_every_dtype_into_the_existing_buffer() -> Result<()> {
    let d = dev!();
    let dtypes = supported(
        &d,
        &[DType::F32, DType::I32, DType::U8, DType::Bool, DType::F16, DType::BF16, DType::F64],
    );
    for dtype in dtypes {
        for n in [1usize, 3, 7, 8] {
            let values = |seed: usize| -> Vec<f64> {
                (0..n + 5)
                    .map(|i| match dtype {
                        DType::Bool => ((i + seed) % 2) as f64,
                        DType::U8 => ((i * 7 + seed) % 200) as f64,
                        DType::I32 => i as f64 - 2.0 + seed as f64,
                        _ => (i as f64 - 2.0) * 0.5 + seed as f64,
                    })
                    .collect()
            };
            let dst = leaf(&values(1)[..n], &[n], dtype, &d)?;
            dst.realize()?;
            let big = leaf(&values(3), &[n + 5], dtype, &d)?;
            for offset in [0usize, 1, 4] {
                let src = big.narrow(0, offset, n)?;
                dst.assign(&src)?;
                assert_eq!(
                    dst.to_vec_f64()?,
                    values(3)[offset..offset + n].to_vec(),
                    "{dtype} n={n} offset={offset}"
                );
            }
        }
    }
    Ok(())
}

/// The destination keeps its buffer on a GPU: a tensor that shares it
/// (a parameter's view of its packed buffer, say) reads the new values.
#[test]
fn assign_is_seen_through_views_of_the_destination_on_devices() -> Result<()> {
    let d = dev!();
    let dst = leaf(&[1.0, 2.0, 3.0, 4.0], &[4], DType::F32, &d)?;
    dst.realize()?;
    let tail = dst.narrow(0, 2, 2)?;
    tail.realize()?;
    dst.assign(&leaf(&[5.0, 6.0, 7.0, 8.0], &[4], DType::F32, &d)?)?;
    assert_eq!(dst.to_vec_f64()?, vec![5.0, 6.0, 7.0, 8.0]);
    if matches!(d, Device::Wgpu | Device::Cuda(_)) {
        // The CPU gives the node a fresh buffer instead (nothing records
        // its address there), so only devices share the write.
        assert!(tail.shares_storage(&dst));
        assert_eq!(tail.to_vec_f64()?, vec![7.0, 8.0]);
    }
    // A destination that is a view, or lazy, is refused with its shape named.
    let view = dst.narrow(0, 1, 2)?;
    let err = view.assign(&leaf(&[0.0, 0.0], &[2], DType::F32, &d)?).unwrap_err().to_string();
    assert!(err.contains("assign") && err.contains("[2]"), "{err}");
    let lazy = dst.add_scalar(1.0)?;
    let err = lazy.assign(&dst).unwrap_err().to_string();
    assert!(err.contains("lazy") && err.contains("[4]"), "{err}");
    Ok(())
}
