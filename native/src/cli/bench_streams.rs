//! The streams table of the CUDA suite: a chunked pipeline (upload a chunk
//! from the host, `relu(x @ W)` on the GPU, read the result back), done
//! with blocking copies from pageable memory (`to_device`, `to_vec`: each
//! copy waits, nothing overlaps) and with pinned buffers on two
//! [`CopyStream`]s (upload, compute and download of neighbouring chunks
//! overlap). The parts are timed alone too, so the table shows how close
//! the overlapped pipeline comes to its slowest part (the ideal).
//!
//! Timing as in the rest of the suite: 5 warm-ups, then the reps listed,
//! median; every copy stream and the device are synchronized before the
//! clock stops; the last chunk of both pipelines is checked against the
//! f64 reference on a sample of rows.

use fusegraph::cuda::{CopyStream, PinnedBuffer};
use fusegraph_core::{synchronize, Device, Result, Tensor};
use serde_json::{json, Value};

use super::measure::{check, fill, time};

/// f32 matmul tolerance, relative to the largest reference magnitude.
const TOL: f64 = 1e-4;

/// `Ok((json, all checks passed))`.
pub fn streams(dev: &Device, quick: bool) -> Result<(Value, bool)> {
    let (chunks, rows, k, n) = if quick {
        (4, 512, 1024, 1024)
    } else {
        (16, 2048, 4096, 4096)
    };
    let reps = if quick { 5 } else { 20 };
    let w = Tensor::from_vec(fill(k * n, 71), [k, n], &Device::Cpu)?;
    let w_dev = w.to_device(dev)?;
    w_dev.realize()?;
    let host: Vec<Tensor> = (0..chunks)
        .map(|c| Tensor::from_vec(fill(rows * k, 100 + c as u64), [rows, k], &Device::Cpu))
        .collect::<Result<_>>()?;
    let compute = |x: &Tensor| -> Result<Tensor> { x.matmul(&w_dev)?.relu() };

    // Blocking: each copy from or to pageable memory returns when it is done.
    let mut blocking_last = Vec::new();
    let blocking = time(5, reps, || {
        for x in &host {
            blocking_last = compute(&x.to_device(dev)?)?.to_vec::<f32>()?;
        }
        Ok(())
    })?;

    // Overlapped: pinned buffers, one copy stream each way.
    let (up, down) = (CopyStream::new(dev)?, CopyStream::new(dev)?);
    let mut ins: Vec<PinnedBuffer<f32>> = Vec::with_capacity(chunks);
    for x in &host {
        let mut p = PinnedBuffer::new(dev, rows * k)?;
        x.with_slice::<f32, _>(|s| p.copy_from_slice(s))??;
        ins.push(p);
    }
    let mut outs: Vec<PinnedBuffer<f32>> = (0..chunks)
        .map(|_| PinnedBuffer::new(dev, rows * n))
        .collect::<Result<_>>()?;
    let overlapped = time(5, reps, || {
        for (x_host, y_host) in ins.iter_mut().zip(outs.iter_mut()) {
            let x = up.upload(x_host, [rows, k])?;
            down.download(&compute(&x)?, y_host)?;
        }
        down.synchronize()?;
        outs.iter().try_for_each(PinnedBuffer::wait)
    })?;

    // The parts alone.
    let resident: Vec<Tensor> = host
        .iter()
        .map(|x| {
            let d = x.to_device(dev)?;
            d.realize()?;
            Ok(d)
        })
        .collect::<Result<_>>()?;
    let compute_only = time(5, reps, || {
        for x in &resident {
            compute(x)?.realize()?;
        }
        synchronize(*dev)
    })?;
    let h2d_only = time(5, reps, || {
        for x_host in ins.iter_mut() {
            up.upload(x_host, [rows, k])?;
        }
        up.synchronize()
    })?;
    let results: Vec<Tensor> = resident.iter().map(compute).collect::<Result<_>>()?;
    Tensor::realize_all(&results)?;
    let d2h_only = time(5, reps, || {
        for (y, y_host) in results.iter().zip(outs.iter_mut()) {
            down.download(y, y_host)?;
        }
        down.synchronize()
    })?;
    drop(results);

    // Checks: the last chunk of each pipeline against the reference.
    let last = chunks - 1;
    let sample = 2;
    let want = host[last].narrow(0, 0, sample)?.matmul(&w)?.relu()?;
    let as_tensor =
        |v: &[f32]| Tensor::from_vec(v[..sample * n].to_vec(), [sample, n], &Device::Cpu);
    // Redo the overlapped pipeline once so `outs` holds its results again.
    for (x_host, y_host) in ins.iter_mut().zip(outs.iter_mut()) {
        let x = up.upload(x_host, [rows, k])?;
        down.download(&compute(&x)?, y_host)?;
    }
    let over_chk = check(&as_tensor(outs[last].as_slice()?)?, &want, TOL)?;
    let block_chk = check(&as_tensor(&blocking_last)?, &want, TOL)?;
    let ok = over_chk.ok && block_chk.ok;

    let ideal = compute_only
        .median_s
        .max(h2d_only.median_s)
        .max(d2h_only.median_s);
    let speedup = blocking.median_s / overlapped.median_s;
    let in_bytes = (chunks * rows * k * 4) as f64;
    let out_bytes = (chunks * rows * n * 4) as f64;
    let flops = 2.0 * (chunks * rows) as f64 * k as f64 * n as f64;
    eprintln!(
        "streams {chunks}x[{rows},{k}]@[{k},{n}]: blocking {:.2} ms, overlapped {:.2} ms = {speedup:.2}x; parts: compute {:.2}, h2d {:.2} ({:.1} GB/s), d2h {:.2} ({:.1} GB/s) ms; overlapped/ideal {:.2}  {}",
        blocking.median_s * 1e3,
        overlapped.median_s * 1e3,
        compute_only.median_s * 1e3,
        h2d_only.median_s * 1e3,
        in_bytes / h2d_only.median_s / 1e9,
        d2h_only.median_s * 1e3,
        out_bytes / d2h_only.median_s / 1e9,
        overlapped.median_s / ideal,
        if ok { "ok" } else { "FAILED" }
    );
    Ok((
        json!({
            "name": "streams",
            "what": format!("{chunks} chunks: upload [{rows},{k}] f32 from the host, relu(x @ W[{k},{n}]), read [{rows},{n}] back; blocking pageable copies (to_device/to_vec) vs pinned buffers on two copy streams overlapping the compute"),
            "chunks": chunks,
            "chunk_shape": [rows, k],
            "w_shape": [k, n],
            "flops": flops,
            "h2d_bytes": in_bytes,
            "d2h_bytes": out_bytes,
            "blocking": blocking,
            "overlapped": overlapped,
            "compute_only": compute_only,
            "h2d_pinned_only": h2d_only,
            "d2h_pinned_only": d2h_only,
            "h2d_gbps": in_bytes / h2d_only.median_s / 1e9,
            "d2h_gbps": out_bytes / d2h_only.median_s / 1e9,
            "ideal_s": ideal,
            "overlapped_over_ideal": overlapped.median_s / ideal,
            "speedup": speedup,
            "check_blocking": block_chk,
            "check_overlapped": over_chk,
            "check_ok": ok,
        }),
        ok,
    ))
}
