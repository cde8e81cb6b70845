//! Shapes: sizes per axis, element counts, contiguous strides, NumPy
//! broadcasting and axis normalisation.

use crate::error::{Error, Result};

/// The size of each axis of a tensor. Rank 0 is a scalar with one element.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    pub fn new(dims: impl Into<Vec<usize>>) -> Self {
        Shape(dims.into())
    }

    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> usize {
        self.0.iter().product()
    }

    /// Number of elements, or an error if it does not fit in `usize` or would
    /// need more than `isize::MAX` bytes at `elem_bytes` per element.
    pub fn checked_numel(&self, op: &'static str, elem_bytes: usize) -> Result<usize> {
        let n = self.0.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        match n {
            Some(n)
                if n.checked_mul(elem_bytes.max(1))
                    .is_some_and(|b| b <= isize::MAX as usize) =>
            {
                Ok(n)
            }
            _ => Err(Error::TooLarge {
                op,
                shape: self.0.clone(),
            }),
        }
    }

    /// Row-major strides, in elements.
    pub fn contiguous_strides(&self) -> Vec<isize> {
        contiguous_strides(&self.0)
    }

    /// Resolves a possibly negative axis (`-1` is the last) against this rank.
    pub fn axis(&self, op: &'static str, axis: isize) -> Result<usize> {
        normalize_axis(op, axis, &self.0)
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Self {
        Shape(v)
    }
}
impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Self {
        Shape(v.to_vec())
    }
}
impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Self {
        Shape(v.to_vec())
    }
}
impl From<()> for Shape {
    fn from(_: ()) -> Self {
        Shape(Vec::new())
    }
}

/// Steps `coords` to the next position of `dims` in row-major order (the
/// last axis fastest), wrapping to all zeros after the last position.
pub fn next_coords(coords: &mut [usize], dims: &[usize]) {
    for ax in (0..coords.len()).rev() {
        coords[ax] += 1;
        if coords[ax] < dims[ax] {
            return;
        }
        coords[ax] = 0;
    }
}

/// Row-major strides of `dims`, in elements.
pub fn contiguous_strides(dims: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; dims.len()];
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(dims).rev() {
        *s = acc;
        acc = acc.saturating_mul(d.max(1) as isize);
    }
    strides
}

/// Resolves a possibly negative axis against `dims`.
pub fn normalize_axis(op: &'static str, axis: isize, dims: &[usize]) -> Result<usize> {
    let rank = dims.len() as isize;
    let a = if axis < 0 { axis + rank } else { axis };
    if a < 0 || a >= rank {
        return Err(Error::AxisOutOfRange {
            op,
            axis,
            rank: dims.len(),
            shape: dims.to_vec(),
        });
    }
    Ok(a as usize)
}

/// Resolves a set of axes: negative ones count from the end, duplicates are
/// an error, the result is sorted. An empty set means "all axes".
pub fn normalize_axes(op: &'static str, axes: &[isize], dims: &[usize]) -> Result<Vec<usize>> {
    if axes.is_empty() {
        return Ok((0..dims.len()).collect());
    }
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let a = normalize_axis(op, a, dims)?;
        if out.contains(&a) {
            return Err(Error::DuplicateAxis {
                op,
                axis: a,
                axes: axes.iter().map(|&x| x as usize).collect(),
            });
        }
        out.push(a);
    }
    out.sort_unstable();
    Ok(out)
}

/// The NumPy broadcast of two shapes: align on the right, size-1 axes stretch.
pub fn broadcast_shapes(op: &'static str, lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>> {
    let rank = lhs.len().max(rhs.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let l = if i + lhs.len() >= rank {
            lhs[i + lhs.len() - rank]
        } else {
            1
        };
        let r = if i + rhs.len() >= rank {
            rhs[i + rhs.len() - rank]
        } else {
            1
        };
        out[i] = match (l, r) {
            (l, r) if l == r => l,
            (1, r) => r,
            (l, 1) => l,
            _ => {
                return Err(Error::Broadcast {
                    op,
                    lhs: lhs.to_vec(),
                    rhs: rhs.to_vec(),
                })
            }
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_aligns_right() {
        assert_eq!(
            broadcast_shapes("t", &[1024, 1024, 3], &[3]).unwrap(),
            vec![1024, 1024, 3]
        );
        assert_eq!(
            broadcast_shapes("t", &[64, 1, 1], &[64, 1024, 1024]).unwrap(),
            vec![64, 1024, 1024]
        );
        assert_eq!(broadcast_shapes("t", &[], &[2, 3]).unwrap(), vec![2, 3]);
        let err = broadcast_shapes("add", &[3, 4], &[5]).unwrap_err();
        assert_eq!(err.to_string(), "add: cannot broadcast [3, 4] with [5]");
    }

    #[test]
    fn axes_normalise_and_reject_duplicates() {
        assert_eq!(
            normalize_axes("sum", &[-1, 0], &[2, 3, 4]).unwrap(),
            vec![0, 2]
        );
        assert!(normalize_axes("sum", &[1, -2], &[2, 3, 4]).is_err());
        assert!(normalize_axis("sum", 3, &[2, 3, 4]).is_err());
    }

    #[test]
    fn numel_overflow_is_an_error() {
        assert!(Shape::new(vec![usize::MAX, 2])
            .checked_numel("zeros", 4)
            .is_err());
        assert_eq!(Shape::new(vec![]).numel(), 1);
    }
}
