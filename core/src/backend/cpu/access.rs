//! Strided reads into dense chunks. A kernel walks its domain in row-major
//! chunks; each load turns "elements start..start+len of the domain" into
//! reads of its storage through its layout.

use crate::backend::cpu::compute::Compute;
use crate::backend::cpu::CpuStorage;
use crate::dtype::Element;
use crate::layout::Layout;

/// A layout with adjacent axes merged wherever the strides allow it, so the
/// inner loop runs as long as possible. Linear (row-major) order is unchanged.
#[derive(Debug, Clone)]
pub struct Walk {
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
    pub offset: isize,
}

impl Walk {
    pub fn new(l: &Layout) -> Walk {
        let (shape, strides) = l.merged_axes();
        Walk {
            shape,
            strides,
            offset: l.offset as isize,
        }
    }

    /// True when the whole walk is one dense run (contiguous).
    pub fn dense(&self) -> bool {
        self.shape.len() == 1 && self.strides[0] == 1
    }

    /// Storage index of linear position `lin`, plus the coordinates.
    fn locate(&self, mut lin: usize, coords: &mut [usize]) -> isize {
        let mut idx = self.offset;
        for ax in (0..self.shape.len()).rev() {
            let d = self.shape[ax];
            coords[ax] = lin % d;
            lin /= d;
            idx += coords[ax] as isize * self.strides[ax];
        }
        idx
    }

    /// Calls `run(dst_pos, src_index, len, stride)` for each inner run
    /// covering linear positions `start..start + len`.
    #[inline]
    pub fn runs(&self, start: usize, len: usize, mut run: impl FnMut(usize, isize, usize, isize)) {
        let rank = self.shape.len();
        let inner = self.shape[rank - 1];
        let s_in = self.strides[rank - 1];
        let mut coords = [0usize; 16];
        let mut heap;
        let coords: &mut [usize] = if rank <= 16 {
            &mut coords[..rank]
        } else {
            heap = vec![0usize; rank];
            &mut heap
        };
        let mut idx = self.locate(start, coords);
        let mut pos = 0;
        while pos < len {
            let n = (inner - coords[rank - 1]).min(len - pos);
            run(pos, idx, n, s_in);
            pos += n;
            // Advance the odometer by n along the inner axis (never past it).
            coords[rank - 1] += n;
            idx += n as isize * s_in;
            let mut ax = rank - 1;
            while coords[ax] == self.shape[ax] && ax > 0 {
                idx -= self.shape[ax] as isize * self.strides[ax];
                coords[ax] = 0;
                ax -= 1;
                coords[ax] += 1;
                idx += self.strides[ax];
            }
        }
    }
}

/// Reads linear positions `start..start + out.len()` of `walk` from `src`.
#[inline]
pub fn gather<T: Compute>(src: &CpuStorage, walk: &Walk, start: usize, out: &mut [T]) {
    crate::with_storage!(src, |v| gather_typed(v, walk, start, out))
}

#[inline]
fn gather_typed<T: Compute, E: Element>(src: &[E], walk: &Walk, start: usize, out: &mut [T]) {
    let len = out.len();
    walk.runs(start, len, |pos, idx, n, s| {
        let dst = &mut out[pos..pos + n];
        if s == 1 {
            let from = &src[idx as usize..idx as usize + n];
            for (d, &x) in dst.iter_mut().zip(from) {
                *d = T::from_elem(x);
            }
        } else if s == 0 {
            let x = T::from_elem(src[idx as usize]);
            dst.fill(x);
        } else {
            for (j, d) in dst.iter_mut().enumerate() {
                *d = T::from_elem(src[(idx + j as isize * s) as usize]);
            }
        }
    });
}

/// Writes a chunk of computed values into `dst` (contiguous) at `start`.
#[inline]
pub fn store<T: Compute>(dst: &mut CpuStorage, start: usize, vals: &[T]) {
    crate::with_storage!(dst, |v| store_typed(
        &mut v[start..start + vals.len()],
        vals
    ))
}

#[inline]
pub fn store_typed<T: Compute, E: Element>(dst: &mut [E], vals: &[T]) {
    for (d, &x) in dst.iter_mut().zip(vals) {
        *d = x.store::<E>();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_matches_layout_indices() {
        let data: Vec<f32> = (0..60).map(|x| x as f32).collect();
        let s = CpuStorage::F32(data);
        let l = Layout::contiguous(&[3, 4, 5])
            .permute(&[2, 0, 1])
            .unwrap()
            .narrow(1, 1, 2)
            .unwrap();
        let w = Walk::new(&l);
        let want: Vec<f32> = l.indices().into_iter().map(|i| i as f32).collect();
        for start in 0..want.len() {
            for len in 0..=(want.len() - start).min(13) {
                let mut out = vec![0f32; len];
                gather(&s, &w, start, &mut out);
                assert_eq!(out, want[start..start + len], "start {start} len {len}");
            }
        }
    }

    #[test]
    fn walk_merges_contiguous_axes() {
        let w = Walk::new(&Layout::contiguous(&[4, 1, 8, 3]));
        assert_eq!(w.shape, vec![96]);
        let b = Walk::new(&Layout::contiguous(&[3]).expand(&[1024, 1024, 3]).unwrap());
        assert_eq!(b.shape, vec![1048576, 3]);
        assert_eq!(b.strides, vec![0, 1]);
    }
}
