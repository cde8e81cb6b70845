//! Composing two strided accesses: a consumer reads a producer's
//! (contiguous) output through `outer`; the producer read its input through
//! `inner`. When the consumer's index map stays inside the producer's axes
//! without carrying from one axis into the next, the consumer can read the
//! producer's input directly, and the two kernels fuse.

use crate::layout::Layout;
use crate::shape::contiguous_strides;

/// The layout over `inner`'s storage that `outer` (over a contiguous buffer
/// of shape `inner.shape`) describes, or `None` if it is not affine.
pub fn compose(outer: &Layout, inner: &Layout) -> Option<Layout> {
    let ps = &inner.shape;
    let cs = contiguous_strides(ps);
    // Inner is a plain contiguous read: any outer view is valid as is.
    if inner.strides == cs || inner.is_contiguous() {
        return Some(Layout {
            shape: outer.shape.clone(),
            strides: outer.strides.clone(),
            offset: outer.offset + inner.offset,
        });
    }
    let numel: usize = ps.iter().product();
    if numel == 0 || outer.numel() == 0 {
        return Some(Layout {
            shape: outer.shape.clone(),
            strides: vec![0; outer.rank()],
            offset: inner.offset,
        });
    }
    // Adjacent producer axes that `inner` walks as one (a broadcast over
    // N, H and W, a contiguous run) are merged first, so that an outer step
    // crossing from one into the next (a reshape merging them, as the
    // reduction split does) stays affine.
    let (ps, strides) = inner.merged_axes();
    let inner = &Layout {
        shape: ps,
        strides,
        offset: inner.offset,
    };
    let ps = &inner.shape;
    let cs = contiguous_strides(ps);
    // Starting coordinates of the outer view in the producer's domain.
    let mut start = vec![0isize; ps.len()];
    let mut rem = outer.offset;
    for j in 0..ps.len() {
        let c = cs[j] as usize;
        start[j] = (rem / c) as isize;
        rem %= c;
    }
    let mut lo = start.clone();
    let mut hi = start.clone();
    let mut strides = vec![0isize; outer.rank()];
    for (k, (&size, &s)) in outer.shape.iter().zip(&outer.strides).enumerate() {
        if size <= 1 || s == 0 {
            continue;
        }
        let a = s.unsigned_abs() as isize;
        // The producer axis this step walks along: the outermost one whose
        // contiguous stride divides the step.
        let j = (0..ps.len()).find(|&j| ps[j] > 1 && cs[j] <= a && a % cs[j] == 0)?;
        let mult = (a / cs[j]) * s.signum();
        let span = (size as isize - 1) * mult;
        if span < 0 {
            lo[j] += span;
        } else {
            hi[j] += span;
        }
        strides[k] = mult * inner.strides[j];
    }
    if (0..ps.len()).any(|j| lo[j] < 0 || hi[j] >= ps[j] as isize) {
        return None;
    }
    let offset = inner.offset as isize
        + start
            .iter()
            .zip(&inner.strides)
            .map(|(&c, &st)| c * st)
            .sum::<isize>();
    Some(Layout {
        shape: outer.shape.clone(),
        strides,
        offset: offset as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks `compose` against brute force: index through outer, unravel,
    /// index through inner.
    fn brute(outer: &Layout, inner: &Layout) -> Vec<usize> {
        let cs = contiguous_strides(&inner.shape);
        outer
            .indices()
            .into_iter()
            .map(|lin| {
                let mut rem = lin;
                let coords: Vec<usize> = cs
                    .iter()
                    .map(|&c| {
                        let v = rem / c as usize;
                        rem %= c as usize;
                        v
                    })
                    .collect();
                inner.index_of(&coords)
            })
            .collect()
    }

    #[test]
    fn transpose_of_a_broadcast_producer() {
        // producer [3,4] reads x[4] broadcast over rows; consumer reads its transpose
        let inner = Layout::contiguous(&[4]).expand(&[3, 4]).unwrap();
        let outer = Layout::contiguous(&[3, 4]).permute(&[1, 0]).unwrap();
        let c = compose(&outer, &inner).unwrap();
        assert_eq!(c.indices(), brute(&outer, &inner));
    }

    #[test]
    fn narrow_and_split_compose() {
        let inner = Layout::contiguous(&[6, 5]).permute(&[1, 0]).unwrap(); // [5,6] transposed read
        let outer = Layout::contiguous(&[5, 6])
            .narrow(1, 2, 4)
            .unwrap()
            .narrow(0, 1, 3)
            .unwrap();
        let c = compose(&outer, &inner).unwrap();
        assert_eq!(c.indices(), brute(&outer, &inner));
        let split = Layout {
            shape: vec![5, 2, 3],
            strides: vec![6, 3, 1],
            offset: 0,
        };
        let c = compose(&split, &inner).unwrap();
        assert_eq!(c.indices(), brute(&split, &inner));
    }

    #[test]
    fn split_reshape_of_a_broadcast_producer() {
        // The column split views a per-channel broadcast over [N, H, W, C]
        // as [chunks, rows per chunk, C]: the chunk axis crosses N and H.
        let inner = Layout::contiguous(&[1, 1, 1, 8])
            .expand(&[4, 6, 6, 8])
            .unwrap();
        let outer = Layout::contiguous(&[4, 6, 6, 8])
            .reshape_view(&[16, 9, 8])
            .unwrap();
        let c = compose(&outer, &inner).expect("affine");
        assert_eq!(c.strides, vec![0, 0, 1]);
        assert_eq!(c.indices(), brute(&outer, &inner));
    }

    /// Every layout reachable by permuting, broadcasting and narrowing a
    /// small tensor, read through every reshape of the producer's domain
    /// into two axes: where `compose` answers, it must agree with
    /// brute force.
    #[test]
    fn composed_reads_match_brute_force() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..400 {
            let shape: Vec<usize> = (0..3).map(|_| 1 + next(4)).collect();
            let base = Layout::contiguous(&[shape[0] + 1, shape[1], shape[2]]);
            let mut inner = base.narrow(0, next(2), shape[0]).unwrap();
            if next(2) == 0 {
                let axis = next(3);
                let mut one = inner.shape.clone();
                one[axis] = 1;
                inner = Layout::contiguous(&one).expand(&inner.shape).unwrap();
            }
            let perms = [[0, 1, 2], [1, 0, 2], [2, 1, 0], [0, 2, 1]];
            let perm = perms[next(4)];
            inner = inner.permute(&perm).unwrap();
            let domain = inner.shape.clone();
            let numel: usize = domain.iter().product();
            for split in 1..=numel {
                if numel % split != 0 {
                    continue;
                }
                let outer = Layout::contiguous(&domain)
                    .reshape_view(&[split, numel / split])
                    .unwrap();
                if let Some(c) = compose(&outer, &inner) {
                    assert_eq!(c.indices(), brute(&outer, &inner), "{outer:?} {inner:?}");
                }
            }
        }
    }

    #[test]
    fn merge_across_axes_is_refused() {
        let inner = Layout::contiguous(&[6, 5]).permute(&[1, 0]).unwrap();
        let outer = Layout::contiguous(&[30]);
        assert!(compose(&outer, &inner).is_none());
    }
}
