//! Memory stays flat over many realize/drop cycles: every buffer a dropped
//! tensor held goes back to the pool (or the allocator), and the schedule
//! cache does not grow for graphs of one structure. Prints the figures.

use fusegraph_core::{Device, Result, Tensor};

/// Resident set size in bytes (Linux; `None` elsewhere).
fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // The page size of every Linux target fusegraph builds for.
    Some(pages * 4096)
}

fn one_cycle(i: usize) -> Result<f32> {
    let dev = Device::Cpu;
    // New data every cycle, one graph structure: the schedule is compiled
    // once. (A new random seed per cycle would be a new kernel per cycle:
    // seeds are kernel constants.)
    let a = Tensor::from_vec(
        (0..256 * 256)
            .map(|k| ((k + i) % 17) as f32 * 0.1)
            .collect(),
        [256, 256],
        &dev,
    )?;
    let b = Tensor::from_vec(vec![0.5f32; 256], [256], &dev)?;
    let y = a
        .matmul(&a.t()?)?
        .add(&b)?
        .relu()?
        .softmax(-1)?
        .sum(&[0, 1], false)?;
    y.item::<f32>()
}

#[test]
fn ten_thousand_realize_drop_cycles_hold_memory_flat() -> Result<()> {
    // Warm-up fills the pool and the schedule cache to their steady state.
    for i in 0..200 {
        let s = one_cycle(i)?;
        // Each of the 256 softmax rows sums to one.
        assert!(
            (s - 256.0).abs() < 1e-2,
            "cycle {i}: softmax rows summed to {s}"
        );
    }
    let Some(before) = rss_bytes() else {
        eprintln!("skipped: no /proc/self/statm on this platform");
        return Ok(());
    };
    for i in 200..10_200 {
        one_cycle(i)?;
    }
    let after = rss_bytes().unwrap_or(before);
    let grew = after.saturating_sub(before);
    eprintln!(
        "leak check: RSS {:.1} MiB after warm-up, {:.1} MiB after 10,000 more cycles (+{:.2} MiB)",
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        grew as f64 / 1048576.0
    );
    // One cycle allocates ~0.5 MiB (pooled sizes: the pool is exercised); a leak of one buffer per cycle would grow
    // by gigabytes. 16 MiB covers allocator noise and test-harness threads.
    assert!(
        grew < 16 << 20,
        "RSS grew by {grew} bytes over 10,000 cycles"
    );
    Ok(())
}
