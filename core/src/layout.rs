//! `Layout`: how a tensor's logical elements sit in a storage buffer
//! (shape, strides in elements, and a starting offset). Every view op is a
//! function from one layout to another; none of them touches data.

use crate::error::{Error, Result};
use crate::shape::{contiguous_strides, next_coords, normalize_axis};

/// Shape + strides (in elements, may be 0 for broadcast or negative for
/// reversed views) + offset of the first element in the storage.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
    pub offset: usize,
}

impl Layout {
    /// The row-major layout of `shape` starting at element 0.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements. Saturates at `usize::MAX` instead of wrapping
    /// (a shape whose count overflows is refused by
    /// [`Layout::checked_numel`] wherever a tensor is made).
    pub fn numel(&self) -> usize {
        self.count().unwrap_or(usize::MAX)
    }

    /// Number of elements, or [`Error::TooLarge`] naming `op` and the shape
    /// when the count does not fit in `usize` (on wasm32, past 2^32 - 1).
    pub fn checked_numel(&self, op: &'static str) -> Result<usize> {
        self.count().ok_or_else(|| Error::TooLarge {
            op,
            shape: self.shape.clone(),
        })
    }

    /// The element count, `None` when it overflows `usize` (a zero-sized
    /// axis makes it 0 whatever the others are).
    fn count(&self) -> Option<usize> {
        if self.shape.contains(&0) {
            return Some(0);
        }
        self.shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }

    /// True when the elements are dense, row-major, with no gaps (offset may be
    /// non-zero). Size-1 axes may have any stride, as in PyTorch.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d == 1 {
                continue;
            }
            if s != expected {
                return false;
            }
            expected *= d as isize;
        }
        true
    }

    /// The shape and strides with size-1 axes dropped and neighbouring axes
    /// merged wherever the outer stride is the inner one times the inner size
    /// (the merged axis walks the same addresses in the same order); `[1]`
    /// and `[0]` when nothing is left.
    pub fn merged_axes(&self) -> (Vec<usize>, Vec<isize>) {
        let mut shape: Vec<usize> = Vec::with_capacity(self.rank());
        let mut strides: Vec<isize> = Vec::with_capacity(self.rank());
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            if d == 1 {
                continue;
            }
            match (shape.last_mut(), strides.last_mut()) {
                (Some(ld), Some(ls)) if *ls == s * d as isize => {
                    *ld *= d;
                    *ls = s;
                }
                _ => {
                    shape.push(d);
                    strides.push(s);
                }
            }
        }
        if shape.is_empty() {
            shape.push(1);
            strides.push(0);
        }
        (shape, strides)
    }

    /// Contiguous and starting at element 0 of a storage of exactly `numel` elements.
    pub fn is_dense_from_zero(&self, storage_len: usize) -> bool {
        self.is_contiguous() && self.offset == 0 && self.numel() == storage_len
    }

    /// Smallest and largest storage index the view touches, or `None` if it is empty.
    pub fn index_range(&self) -> Option<(isize, isize)> {
        if self.shape.contains(&0) {
            return None;
        }
        let mut lo = self.offset as isize;
        let mut hi = self.offset as isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let span = (d as isize - 1).checked_mul(s)?;
            if span < 0 {
                lo = lo.checked_add(span)?;
            } else {
                hi = hi.checked_add(span)?;
            }
        }
        Some((lo, hi))
    }

    /// Checks that every index the view can produce lies in `0..storage_len`.
    pub fn check_bounds(&self, op: &'static str, storage_len: usize) -> Result<()> {
        if self.shape.len() != self.strides.len() {
            return Err(Error::StrideRank {
                op,
                shape: self.shape.clone(),
                strides: self.strides.clone(),
            });
        }
        let ok = match self.index_range() {
            None => self.shape.contains(&0),
            Some((lo, hi)) => lo >= 0 && (hi as usize) < storage_len,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::ViewOutOfBounds {
                op,
                shape: self.shape.clone(),
                strides: self.strides.clone(),
                offset: self.offset,
                len: storage_len,
            })
        }
    }

    /// Storage index of the element at `coords`.
    pub fn index_of(&self, coords: &[usize]) -> usize {
        let mut idx = self.offset as isize;
        for (&c, &s) in coords.iter().zip(&self.strides) {
            idx += c as isize * s;
        }
        idx as usize
    }

    /// Reorders axes: axis `i` of the result is axis `axes[i]` of `self`.
    pub fn permute(&self, axes: &[usize]) -> Result<Layout> {
        let rank = self.rank();
        let mut seen = vec![false; rank];
        let valid = axes.len() == rank
            && axes
                .iter()
                .all(|&a| a < rank && !std::mem::replace(&mut seen[a], true));
        if !valid {
            return Err(Error::BadPermutation {
                op: "permute",
                axes: axes.to_vec(),
                rank,
                shape: self.shape.clone(),
            });
        }
        Ok(Layout {
            shape: axes.iter().map(|&a| self.shape[a]).collect(),
            strides: axes.iter().map(|&a| self.strides[a]).collect(),
            offset: self.offset,
        })
    }

    /// Swaps two axes (negative axes count from the end).
    pub fn transpose(&self, a: isize, b: isize) -> Result<Layout> {
        let a = normalize_axis("transpose", a, &self.shape)?;
        let b = normalize_axis("transpose", b, &self.shape)?;
        let mut axes: Vec<usize> = (0..self.rank()).collect();
        axes.swap(a, b);
        self.permute(&axes)
    }

    /// Keeps `len` elements of `axis` starting at `start`.
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Result<Layout> {
        let axis = normalize_axis("narrow", axis, &self.shape)?;
        let size = self.shape[axis];
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::NarrowOutOfRange {
                op: "narrow",
                axis,
                start,
                len,
                size,
                shape: self.shape.clone(),
            });
        }
        let mut out = self.clone();
        out.shape[axis] = len;
        if len > 0 {
            out.offset = (self.offset as isize + start as isize * self.strides[axis]) as usize;
        }
        Ok(out)
    }

    /// Broadcasts to `shape` (NumPy rules: new axes on the left, size-1 axes
    /// stretch with stride 0).
    pub fn expand(&self, shape: &[usize]) -> Result<Layout> {
        let err = || Error::Expand {
            op: "expand",
            from: self.shape.clone(),
            to: shape.to_vec(),
        };
        if shape.len() < self.rank() {
            return Err(err());
        }
        let lead = shape.len() - self.rank();
        let mut strides = vec![0isize; shape.len()];
        for (i, &target) in shape.iter().enumerate() {
            if i < lead {
                continue;
            }
            let (d, s) = (self.shape[i - lead], self.strides[i - lead]);
            strides[i] = if d == target {
                s
            } else if d == 1 {
                0
            } else {
                return Err(err());
            };
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// Removes a size-1 axis.
    pub fn squeeze(&self, axis: isize) -> Result<Layout> {
        let axis = normalize_axis("squeeze", axis, &self.shape)?;
        if self.shape[axis] != 1 {
            return Err(Error::SqueezeNotOne {
                op: "squeeze",
                axis,
                size: self.shape[axis],
                shape: self.shape.clone(),
            });
        }
        let mut out = self.clone();
        out.shape.remove(axis);
        out.strides.remove(axis);
        Ok(out)
    }

    /// Inserts a size-1 axis before position `axis` (`-1` appends).
    pub fn unsqueeze(&self, axis: isize) -> Result<Layout> {
        let rank = self.rank() as isize + 1;
        let a = if axis < 0 { axis + rank } else { axis };
        if a < 0 || a >= rank {
            return Err(Error::AxisOutOfRange {
                op: "unsqueeze",
                axis,
                rank: self.rank(),
                shape: self.shape.clone(),
            });
        }
        let a = a as usize;
        let mut out = self.clone();
        let stride = if a < self.rank() {
            self.strides[a] * self.shape[a] as isize
        } else {
            1
        };
        out.shape.insert(a, 1);
        out.strides.insert(a, stride);
        Ok(out)
    }

    /// The same elements seen with `shape`, if that is possible without a copy
    /// (PyTorch's rule: each run of merged or split axes must be contiguous
    /// within itself). `None` means a copy is needed.
    pub fn reshape_view(&self, shape: &[usize]) -> Option<Layout> {
        let numel = self.numel();
        if shape.iter().product::<usize>() != numel {
            return None;
        }
        if numel == 0 || self.is_contiguous() {
            return Some(Layout {
                shape: shape.to_vec(),
                strides: contiguous_strides(shape),
                offset: self.offset,
            });
        }
        let mut new_strides = vec![0isize; shape.len()];
        // Walk old axes from the right, grouping them into chunks that are
        // contiguous among themselves, and hand each chunk's elements to new axes.
        let mut view_d = shape.len() as isize - 1;
        let mut chunk_base_stride = *self.strides.last()?;
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..self.rank()).rev() {
            tensor_numel *= self.shape[tensor_d];
            let at_chunk_end = tensor_d == 0
                || (self.shape[tensor_d - 1] != 1
                    && self.strides[tensor_d - 1] != tensor_numel as isize * chunk_base_stride);
            if at_chunk_end {
                while view_d >= 0 && (view_numel < tensor_numel || shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel as isize * chunk_base_stride;
                    view_numel *= shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = self.strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout {
            shape: shape.to_vec(),
            strides: new_strides,
            offset: self.offset,
        })
    }

    /// An arbitrary view of a storage of `storage_len` elements, checked so
    /// that every element it can reach lies inside the storage.
    pub fn as_strided(
        shape: &[usize],
        strides: &[isize],
        offset: usize,
        storage_len: usize,
    ) -> Result<Layout> {
        let l = Layout {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
        };
        l.check_bounds("as_strided", storage_len)?;
        if l.shape.contains(&0) {
            // An empty view reads nothing, so any strides and offset are
            // accepted (as in PyTorch), and none can be checked against the
            // storage. They are normalised here: strides like isize::MAX
            // would otherwise overflow the index arithmetic of the kernels
            // that walk the (empty) view.
            return Ok(Layout::contiguous(shape));
        }
        Ok(l)
    }

    /// Every storage index in logical (row-major) order. For tests and the
    /// reference path; the fast paths never enumerate indices one by one.
    pub fn indices(&self) -> Vec<usize> {
        let n = self.numel();
        let mut out = Vec::with_capacity(n);
        if n == 0 {
            return out;
        }
        let mut coords = vec![0usize; self.rank()];
        for _ in 0..n {
            out.push(self.index_of(&coords));
            next_coords(&mut coords, &self.shape);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_then_reshape_needs_copy() {
        let l = Layout::contiguous(&[2, 3]).transpose(0, 1).unwrap();
        assert!(!l.is_contiguous());
        assert!(l.reshape_view(&[6]).is_none());
        assert!(l.reshape_view(&[3, 2, 1]).is_some());
    }

    #[test]
    fn reshape_of_narrowed_rows_is_a_view() {
        // rows 1..3 of a 4x6 matrix, split columns 6 -> 2x3: still a view
        let l = Layout::contiguous(&[4, 6]).narrow(0, 1, 2).unwrap();
        let v = l.reshape_view(&[2, 2, 3]).unwrap();
        assert_eq!(v.strides, vec![6, 3, 1]);
        assert_eq!(v.offset, 6);
        // columns 1..4 narrowed: merging rows and columns is impossible
        let c = Layout::contiguous(&[4, 6]).narrow(1, 1, 3).unwrap();
        assert!(c.reshape_view(&[12]).is_none());
        assert_eq!(c.reshape_view(&[2, 2, 3]).unwrap().strides, vec![12, 6, 1]);
    }

    #[test]
    fn reshape_view_matches_index_order() {
        let base = Layout::contiguous(&[3, 4, 5])
            .permute(&[0, 2, 1])
            .unwrap()
            .narrow(1, 1, 4)
            .unwrap();
        for target in [vec![3, 4, 4], vec![12, 4], vec![3, 2, 2, 4], vec![3, 16]] {
            if let Some(v) = base.reshape_view(&target) {
                assert_eq!(v.indices(), base.indices(), "target {target:?}");
            }
        }
    }

    #[test]
    fn expand_sets_zero_strides() {
        let l = Layout::contiguous(&[3, 1]).expand(&[2, 3, 4]).unwrap();
        assert_eq!(l.strides, vec![0, 1, 0]);
        assert!(Layout::contiguous(&[3, 2]).expand(&[3, 4]).is_err());
    }

    #[test]
    fn as_strided_is_bounds_checked() {
        assert!(Layout::as_strided(&[2, 2], &[2, 1], 0, 4).is_ok());
        let err = Layout::as_strided(&[2, 2], &[2, 1], 1, 4).unwrap_err();
        assert!(
            err.to_string().contains("reads past storage of 4 elements"),
            "{err}"
        );
        assert!(Layout::as_strided(&[3], &[-1], 1, 4).is_err());
        assert!(Layout::as_strided(&[3], &[-1], 2, 4).is_ok());
        assert!(Layout::as_strided(&[0, 5], &[100, 100], 99, 1).is_ok());
        let empty = Layout::as_strided(&[4, 0, 2], &[6, isize::MIN, isize::MAX], usize::MAX, 0);
        assert_eq!(empty.unwrap(), Layout::contiguous(&[4, 0, 2]));
    }

    #[test]
    fn unsqueeze_and_squeeze_round_trip() {
        let l = Layout::contiguous(&[2, 3]);
        let u = l.unsqueeze(1).unwrap();
        assert_eq!(u.shape, vec![2, 1, 3]);
        assert_eq!(u.squeeze(1).unwrap(), l);
        assert!(l.squeeze(0).is_err());
    }
}
