//! Parallel loops: rayon across cores on native, a plain loop in wasm.

/// Runs `f(block_index, block)` over `out` split into blocks of `block` elements.
pub fn for_blocks<E: Send, F>(out: &mut [E], block: usize, f: F)
where
    F: Fn(usize, &mut [E]) + Sync + Send,
{
    let block = block.max(1);
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        if out.len() > block {
            out.par_chunks_mut(block)
                .enumerate()
                .for_each(|(i, c)| f(i, c));
            return;
        }
    }
    for (i, c) in out.chunks_mut(block).enumerate() {
        f(i, c);
    }
}

/// Maps `f` over `0..n` in parallel and returns the results in order.
pub fn map_range<R: Send, F>(n: usize, f: F) -> Vec<R>
where
    F: Fn(usize) -> R + Sync + Send,
{
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        if n > 1 {
            return (0..n).into_par_iter().map(f).collect();
        }
    }
    (0..n).map(f).collect()
}

/// Threads the fast path may use.
pub fn threads() -> usize {
    #[cfg(feature = "rayon")]
    {
        rayon::current_num_threads()
    }
    #[cfg(not(feature = "rayon"))]
    {
        1
    }
}
