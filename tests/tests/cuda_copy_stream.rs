//! Pinned host memory and copy streams on CUDA: asynchronous uploads and
//! downloads give the same values as the blocking path, buffers recycled
//! through a copy stream's lane are never overwritten while a kernel still
//! reads them, and misuse is a clear error. Without a GPU each test prints
//! `skipped: cuda not available`.
#![cfg(feature = "cuda")]

use fusegraph::cuda::{CopyStream, PinnedBuffer};
use fusegraph_core::{DType, Device, Error, Result, Tensor};
use fusegraph_tests::*;

fn dev() -> Option<Device> {
    available("cuda", cuda_device())
}

fn pattern(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 31 + seed * 7) % 101) as f32 * 0.01 - 0.5)
        .collect()
}

#[test]
fn pinned_round_trip_matches_the_host_data() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let (up, down) = (CopyStream::new(&d)?, CopyStream::new(&d)?);
    let data = pattern(3 * 1000, 1);
    let mut host = PinnedBuffer::<f32>::new(&d, data.len())?;
    assert!(
        host.as_slice()?.iter().all(|&v| v == 0.0),
        "pinned memory starts zeroed"
    );
    host.copy_from_slice(&data)?;
    let t = up.upload(&mut host, [3, 1000])?;
    assert_eq!(t.shape(), &[3, 1000]);
    assert_eq!(t.to_vec::<f32>()?, data);
    let mut back = PinnedBuffer::<f32>::new(&d, data.len())?;
    down.download(&t, &mut back)?;
    assert_eq!(back.as_slice()?, &data[..]);
    // A non-contiguous view is made dense on the device first.
    let mut back_t = PinnedBuffer::<f32>::new(&d, data.len())?;
    down.download(&t.t()?, &mut back_t)?;
    let expect: Vec<f32> = (0..1000)
        .flat_map(|j| (0..3).map(move |i| (i, j)))
        .map(|(i, j)| data[i * 1000 + j])
        .collect();
    assert_eq!(back_t.as_slice()?, &expect[..]);
    Ok(())
}

/// The overlapped pipeline of the bench: upload chunk i while chunk i-1
/// computes and chunk i-2 downloads; every chunk equals the f64 reference.
#[test]
fn overlapped_pipeline_matches_the_reference() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let (m, k, n, chunks) = (64, 96, 80, 12);
    let w = randn(&[k, n], 9, DType::F32, &d)?;
    let w_host = w.to_vec_f64()?;
    let (up, down) = (CopyStream::new(&d)?, CopyStream::new(&d)?);
    // Two input and two output buffers, reused: each reuse must wait for the
    // copy that used the buffer before.
    let mut inputs = [
        PinnedBuffer::<f32>::new(&d, m * k)?,
        PinnedBuffer::new(&d, m * k)?,
    ];
    let mut outputs = [
        PinnedBuffer::<f32>::new(&d, m * n)?,
        PinnedBuffer::new(&d, m * n)?,
    ];
    let mut results = Vec::new();
    for c in 0..chunks {
        let slot = c % 2;
        if c >= 2 {
            results.push(outputs[slot].as_slice()?.to_vec());
        }
        inputs[slot].copy_from_slice(&pattern(m * k, c))?;
        let x = up.upload(&mut inputs[slot], [m, k])?;
        let y = x.matmul(&w)?.relu()?;
        down.download(&y, &mut outputs[slot])?;
    }
    for out in outputs.iter().take(2) {
        results.push(out.as_slice()?.to_vec());
    }
    // results are in chunk order except the last two, which alternate by slot.
    let order: Vec<usize> = (0..chunks - 2).chain([chunks - 2, chunks - 1]).collect();
    let tol = Tol::of(DType::F32).reduce(k).ops(2);
    for (got, &c) in results.iter().zip(&order) {
        let x = pattern(m * k, c);
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k)
                    .map(|p| x[i * k + p] as f64 * w_host[p * n + j])
                    .sum::<f64>()
                    .max(0.0);
                let g = got[i * n + j] as f64;
                assert!(tol.accepts(g, want), "chunk {c} [{i},{j}]: {g} vs {want}");
            }
        }
    }
    Ok(())
}

/// Lane buffers come back with the main stream's position: an upload that
/// reuses one must not overwrite data a queued kernel still reads. A slow
/// kernel reads chunk 0 while the next upload (into the recycled buffer)
/// is queued at once.
#[test]
fn recycled_upload_buffers_wait_for_their_readers() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let up = CopyStream::new(&d)?;
    let n = 1 << 20;
    let mut a = PinnedBuffer::<f32>::new(&d, n)?;
    let mut b = PinnedBuffer::<f32>::new(&d, n)?;
    a.as_mut_slice()?.fill(1.0);
    b.as_mut_slice()?.fill(2.0);
    let w = Tensor::full(1.0, [1024, 1024], DType::F32, &d)?;
    w.realize()?;
    for round in 0..20 {
        let x = up.upload(&mut a, [1024, 1024])?;
        // Several dependent matmuls keep the GPU busy reading x's buffer.
        let mut y = x.matmul(&w)?;
        for _ in 0..4 {
            y = y.mul_scalar(1.0 / 1024.0)?.matmul(&w)?;
        }
        let s = y.sum(&[0, 1], false)?;
        s.realize()?;
        drop((x, y));
        // x's buffer is back in the lane; this upload reuses it at once.
        let z = up.upload(&mut b, [1024, 1024])?;
        let got = s.item::<f32>()?;
        let want = 1024.0f32 * 1024.0 * 1024.0;
        assert!(
            (got - want).abs() <= want * 1e-4,
            "round {round}: sum {got}, expected {want} (a recycled buffer was overwritten early)"
        );
        assert_eq!(
            z.sum(&[0, 1], false)?.item::<f32>()?,
            2.0 * (1 << 20) as f32
        );
    }
    Ok(())
}

#[test]
fn misuse_is_a_clear_error() -> Result<()> {
    let Some(d) = dev() else { return Ok(()) };
    let s = CopyStream::new(&d)?;
    let mut host = PinnedBuffer::<f32>::new(&d, 10)?;
    match s.upload(&mut host, [3, 4]) {
        Err(Error::ElementCount {
            op,
            expected: 12,
            got: 10,
            ..
        }) => assert_eq!(op, "CopyStream::upload"),
        other => panic!("expected ElementCount, got {other:?}"),
    }
    let t = Tensor::full(1.0, [10], DType::F64, &d)?;
    match s.download(&t, &mut host) {
        Err(Error::ElementType { op, .. }) => assert_eq!(op, "CopyStream::download"),
        other => panic!("expected ElementType, got {other:?}"),
    }
    let cpu = Tensor::full(1.0, [10], DType::F32, &Device::Cpu)?;
    match s.download(&cpu, &mut host) {
        Err(Error::DeviceMismatch { op, .. }) => assert_eq!(op, "CopyStream::download"),
        other => panic!("expected DeviceMismatch, got {other:?}"),
    }
    match CopyStream::new(&Device::Cpu) {
        Err(Error::InvalidArgument { .. }) => {}
        other => panic!("expected InvalidArgument, got {:?}", other.map(|_| ())),
    }
    let mut empty = PinnedBuffer::<f32>::new(&d, 0)?;
    let e = s.upload(&mut empty, [0, 5])?;
    assert_eq!(e.shape(), &[0, 5]);
    Ok(())
}
