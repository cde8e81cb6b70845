//! Typed host buffers. One variant per dtype keeps `from_vec`/`to_vec` and
//! ndarray interop zero-copy.

use half::{bf16, f16};

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};

/// A host buffer of one dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuStorage {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    I32(Vec<i32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the typed vector inside `$s`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_storage {
    ($s:expr, |$v:ident| $body:expr) => {
        match $s {
            $crate::backend::cpu::CpuStorage::Bool($v) => $body,
            $crate::backend::cpu::CpuStorage::U8($v) => $body,
            $crate::backend::cpu::CpuStorage::I32($v) => $body,
            $crate::backend::cpu::CpuStorage::F16($v) => $body,
            $crate::backend::cpu::CpuStorage::BF16($v) => $body,
            $crate::backend::cpu::CpuStorage::F32($v) => $body,
            $crate::backend::cpu::CpuStorage::F64($v) => $body,
        }
    };
}

/// The error for a host allocation of `len` elements of `dtype` that the
/// allocator refused (or whose byte count does not fit in `usize`).
pub fn host_oom(op: &'static str, dtype: DType, len: usize) -> Error {
    Error::OutOfMemory {
        op,
        device: "cpu".into(),
        bytes: (len as u64).saturating_mul(dtype.size_in_bytes() as u64),
        why: format!("the host allocator refused a buffer of {len} {dtype} elements"),
    }
}

/// An empty vector with room for exactly `len` elements, or
/// [`Error::OutOfMemory`] when the allocator refuses: never an abort (on
/// wasm32 an infallible allocation past 4 GiB traps the whole instance).
pub fn try_vec_with_capacity<T: Element>(op: &'static str, len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| host_oom(op, T::DTYPE, len))?;
    Ok(v)
}

/// A copy of `data` in a fallibly allocated vector.
pub fn try_to_vec<T: Element>(op: &'static str, data: &[T]) -> Result<Vec<T>> {
    let mut v = try_vec_with_capacity(op, data.len())?;
    v.extend_from_slice(data);
    Ok(v)
}

/// The items of `it` (exactly `len` of them) collected into a fallibly
/// allocated vector.
pub fn try_collect<T: Element>(
    op: &'static str,
    len: usize,
    it: impl IntoIterator<Item = T>,
) -> Result<Vec<T>> {
    let mut v = try_vec_with_capacity(op, len)?;
    v.extend(it.into_iter().take(len));
    Ok(v)
}

/// A zero-filled vector of `len` elements, or [`Error::OutOfMemory`] when the
/// allocator refuses.
pub fn try_zeroed<T: Element + bytemuck::Zeroable>(op: &'static str, len: usize) -> Result<Vec<T>> {
    // calloc-backed: large buffers come as untouched zero pages, as `vec![0; n]`.
    bytemuck::allocation::try_zeroed_vec(len).map_err(|()| host_oom(op, T::DTYPE, len))
}

impl CpuStorage {
    /// Zero-filled storage. Large buffers are advised to use transparent
    /// huge pages: a fresh 64 MiB output otherwise spends more time in 16k
    /// page faults than the kernel spends computing it. Aborts when the
    /// allocator refuses; [`CpuStorage::try_zeros`] returns an error instead.
    pub fn zeros(dtype: DType, len: usize) -> Self {
        let mut s = CpuStorage::zeros_plain(dtype, len);
        s.advise_huge_pages();
        s
    }

    /// [`CpuStorage::zeros`], or [`Error::OutOfMemory`] (naming `op`) when
    /// the allocator refuses. Every buffer the CPU backend allocates for a
    /// kernel or a tensor goes through here.
    pub fn try_zeros(op: &'static str, dtype: DType, len: usize) -> Result<Self> {
        let mut s = match dtype {
            DType::Bool => CpuStorage::Bool(try_zeroed(op, len)?),
            DType::U8 => CpuStorage::U8(try_zeroed(op, len)?),
            DType::I32 => CpuStorage::I32(try_zeroed(op, len)?),
            DType::F16 => CpuStorage::F16(try_zeroed(op, len)?),
            DType::BF16 => CpuStorage::BF16(try_zeroed(op, len)?),
            DType::F32 => CpuStorage::F32(try_zeroed(op, len)?),
            DType::F64 => CpuStorage::F64(try_zeroed(op, len)?),
        };
        s.advise_huge_pages();
        Ok(s)
    }

    /// Grows or shrinks to `len` elements (new ones zero), or
    /// [`Error::OutOfMemory`] when growing is refused.
    pub fn try_resize(&mut self, op: &'static str, len: usize) -> Result<()> {
        let dtype = self.dtype();
        crate::with_storage!(self, |v| {
            if len > v.len() {
                v.try_reserve_exact(len - v.len())
                    .map_err(|_| host_oom(op, dtype, len))?;
            }
            v.resize(len, Default::default());
        });
        Ok(())
    }

    fn advise_huge_pages(&mut self) {
        #[cfg(target_os = "linux")]
        {
            const HUGE: usize = 2 << 20;
            let bytes = self.len() * self.dtype().size_in_bytes();
            if bytes < 2 * HUGE {
                return;
            }
            let start = with_storage!(self, |v| v.as_mut_ptr() as usize);
            let aligned = (start + HUGE - 1) & !(HUGE - 1);
            let end = (start + bytes) & !(HUGE - 1);
            if end > aligned {
                // SAFETY: the range lies inside this vector's allocation;
                // MADV_HUGEPAGE only changes how the kernel backs the pages,
                // never their contents, and an error leaves them as they were.
                unsafe {
                    libc::madvise(
                        aligned as *mut libc::c_void,
                        end - aligned,
                        libc::MADV_HUGEPAGE,
                    );
                }
            }
        }
    }

    fn zeros_plain(dtype: DType, len: usize) -> Self {
        match dtype {
            DType::Bool => CpuStorage::Bool(vec![false; len]),
            DType::U8 => CpuStorage::U8(vec![0; len]),
            DType::I32 => CpuStorage::I32(vec![0; len]),
            DType::F16 => CpuStorage::F16(vec![f16::ZERO; len]),
            DType::BF16 => CpuStorage::BF16(vec![bf16::ZERO; len]),
            DType::F32 => CpuStorage::F32(vec![0.0; len]),
            DType::F64 => CpuStorage::F64(vec![0.0; len]),
        }
    }

    /// Storage of `dtype` holding `values` rounded as a cast would.
    pub fn from_f64(dtype: DType, values: &[f64]) -> Self {
        fn conv<T: Element>(v: &[f64]) -> CpuStorage {
            T::into_storage(v.iter().map(|&x| T::from_f64(x)).collect())
        }
        match dtype {
            DType::Bool => conv::<bool>(values),
            DType::U8 => conv::<u8>(values),
            DType::I32 => conv::<i32>(values),
            DType::F16 => conv::<f16>(values),
            DType::BF16 => conv::<bf16>(values),
            DType::F32 => conv::<f32>(values),
            DType::F64 => conv::<f64>(values),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::Bool(_) => DType::Bool,
            CpuStorage::U8(_) => DType::U8,
            CpuStorage::I32(_) => DType::I32,
            CpuStorage::F16(_) => DType::F16,
            CpuStorage::BF16(_) => DType::BF16,
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
        }
    }

    pub fn len(&self) -> usize {
        with_storage!(self, |v| v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as f64.
    pub fn get_f64(&self, i: usize) -> f64 {
        with_storage!(self, |v| v[i].to_f64())
    }

    /// The elements at `indices`, as f64.
    pub fn gather_f64(&self, indices: &[usize]) -> Vec<f64> {
        with_storage!(self, |v| indices.iter().map(|&i| v[i].to_f64()).collect())
    }

    /// The elements at `indices`, in a new storage of the same dtype.
    pub fn gather(&self, indices: &[usize]) -> CpuStorage {
        with_storage!(self, |v| Element::into_storage(
            indices.iter().map(|&i| v[i]).collect()
        ))
    }

    /// [`CpuStorage::gather`] into a fallibly allocated buffer.
    pub fn try_gather(&self, op: &'static str, indices: &[usize]) -> Result<CpuStorage> {
        Ok(with_storage!(self, |v| Element::into_storage(try_collect(
            op,
            indices.len(),
            indices.iter().map(|&i| v[i])
        )?)))
    }
}
