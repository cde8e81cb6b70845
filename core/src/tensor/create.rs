//! Creation: constants, ranges, seeded random values, and tensors from data.

use super::Tensor;
use crate::backend::cpu::storage::try_to_vec;
use crate::backend::cpu::CpuStorage;
use crate::backend::Storage;
use crate::device::Device;
use crate::dtype::{DType, Element, Scalar};
use crate::error::{Error, Result};
use crate::graph::node::{Node, State};
use crate::graph::op::Op;
use crate::layout::Layout;
use crate::shape::Shape;
use std::sync::Arc;

impl Tensor {
    /// A tensor holding `data` (row-major) with `shape`. No copy.
    pub fn from_vec<T: Element>(
        data: Vec<T>,
        shape: impl Into<Shape>,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = shape.into();
        let n = shape.checked_numel("from_vec", T::DTYPE.size_in_bytes())?;
        if n != data.len() {
            return Err(Error::ElementCount {
                op: "from_vec",
                shape: shape.0,
                expected: n,
                got: data.len(),
            });
        }
        Tensor::from_storage(
            T::into_storage(data),
            Layout::contiguous(shape.dims()),
            *device,
        )
    }

    /// A tensor copied from a slice of plain-old-data elements. The copy
    /// goes into a buffer the CPU backend allocates (large ones backed by
    /// huge pages, as NumPy does for its arrays), which reads measurably
    /// faster than an arbitrary `Vec` handed to [`Tensor::from_vec`].
    pub fn from_slice<T: Element + bytemuck::Pod>(
        data: &[T],
        shape: impl Into<Shape>,
        device: &Device,
    ) -> Result<Tensor> {
        let owned = match T::into_vec(CpuStorage::try_zeros("from_slice", T::DTYPE, data.len())?) {
            Ok(mut v) => {
                v.copy_from_slice(data);
                v
            }
            Err(_) => try_to_vec("from_slice", data)?,
        };
        Tensor::from_vec(owned, shape, device)
    }

    /// A tensor from raw little-endian bytes of `dtype` (any alignment).
    pub fn from_bytes(
        bytes: &[u8],
        dtype: DType,
        shape: impl Into<Shape>,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = shape.into();
        let n = shape.checked_numel("from_bytes", dtype.size_in_bytes())?;
        if bytes.len() != n * dtype.size_in_bytes() {
            return Err(Error::ElementCount {
                op: "from_bytes",
                shape: shape.0,
                expected: n * dtype.size_in_bytes(),
                got: bytes.len(),
            });
        }
        let storage = match dtype {
            DType::Bool => CpuStorage::Bool(bytes.iter().map(|&b| b != 0).collect()),
            DType::U8 => CpuStorage::U8(bytes.to_vec()),
            DType::I32 => CpuStorage::I32(bytemuck::pod_collect_to_vec(bytes)),
            DType::F16 => CpuStorage::F16(bytemuck::pod_collect_to_vec(bytes)),
            DType::BF16 => CpuStorage::BF16(bytemuck::pod_collect_to_vec(bytes)),
            DType::F32 => CpuStorage::F32(bytemuck::pod_collect_to_vec(bytes)),
            DType::F64 => CpuStorage::F64(bytemuck::pod_collect_to_vec(bytes)),
        };
        Tensor::from_storage(storage, Layout::contiguous(shape.dims()), *device)
    }

    /// A realized tensor viewing `storage` through `layout` (checked by
    /// callers). On a GPU device the data is uploaded now, as
    /// `torch.tensor(..., device=...)` does; on `Device::Auto` it stays
    /// on the host until a graph moves it.
    pub(crate) fn from_storage(
        storage: CpuStorage,
        layout: Layout,
        device: Device,
    ) -> Result<Tensor> {
        let len = storage.len();
        let dtype = storage.dtype();
        let storage = match device {
            // Auto keeps data on the host until a graph runs it on a GPU.
            Device::Cpu | Device::Auto => Storage::Cpu(storage),
            gpu => crate::backend::get(gpu)?.upload(&storage)?,
        };
        Ok(Tensor {
            node: Node::new(dtype, layout, len, State::Ready(Arc::new(storage))),
            device,
        })
    }

    /// A realized tensor viewing device `storage` through `layout` (a view
    /// of a buffer as long as `storage`, checked by callers).
    pub(crate) fn from_device_storage_with_layout(
        storage: Storage,
        layout: Layout,
        device: Device,
    ) -> Result<Tensor> {
        let (dtype, len) = (storage.dtype(), storage.len());
        Ok(Tensor {
            node: Node::new(dtype, layout, len, State::Ready(Arc::new(storage))),
            device,
        })
    }

    /// A realized contiguous tensor of `shape` over storage a backend crate
    /// filled itself (such as the CUDA copy stream's asynchronous uploads).
    /// The storage must live on `device` and hold exactly the shape's
    /// elements.
    pub fn from_backend_storage(
        storage: Storage,
        shape: &[usize],
        device: Device,
    ) -> Result<Tensor> {
        if storage.device() != device {
            return Err(Error::DeviceMismatch {
                op: "from_backend_storage",
                lhs: storage.device().name(),
                rhs: device.name(),
            });
        }
        Self::from_device_storage(storage, shape, device)
    }

    /// A realized contiguous tensor of `shape` over storage a backend made
    /// (its length must match the shape).
    pub(crate) fn from_device_storage(
        storage: Storage,
        shape: &[usize],
        device: Device,
    ) -> Result<Tensor> {
        let numel: usize = shape.iter().product();
        if storage.len() != numel {
            return Err(Error::ElementCount {
                op: "from_device_storage",
                shape: shape.to_vec(),
                expected: numel,
                got: storage.len(),
            });
        }
        let dtype = storage.dtype();
        Ok(Tensor {
            node: Node::new(
                dtype,
                Layout::contiguous(shape),
                numel,
                State::Ready(Arc::new(storage)),
            ),
            device,
        })
    }

    /// Every element equal to `value` (rounded to `dtype`).
    pub fn full(
        value: f64,
        shape: impl Into<Shape>,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = shape.into();
        Tensor::lazy(
            Op::Full(Scalar::new(value, dtype)),
            &[],
            dtype,
            shape.dims(),
            *device,
        )
    }

    pub fn zeros(shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::full(0.0, shape, dtype, device)
    }

    pub fn ones(shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::full(1.0, shape, dtype, device)
    }

    /// A scalar (rank-0) tensor.
    pub fn scalar(value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::full(value, (), dtype, device)
    }

    /// `start, start+step, ...` below `end` (above it for a negative step), as NumPy's `arange`.
    pub fn arange(
        start: f64,
        end: f64,
        step: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(Error::InvalidArgument {
                op: "arange",
                what: "start, end and step",
                expected: "finite with step != 0",
                got: format!("{start}, {end}, {step}"),
            });
        }
        let n = ((end - start) / step).ceil().max(0.0);
        if n > (u32::MAX as f64) {
            return Err(Error::TooLarge {
                op: "arange",
                shape: vec![usize::MAX],
            });
        }
        // Every dtype but f64 and i32 computes the range in f32 (WebGPU has
        // no f64): a start, step or value past f32's range would become
        // infinite there and give NaN (0 * inf) or wrong values (inf - x).
        let computed_in_f32 = !matches!(dtype, DType::F64 | DType::I32);
        let span = step * (n - 1.0).max(0.0);
        let last = start + span;
        if computed_in_f32
            && n > 0.0
            && [start, step, span, last]
                .iter()
                .any(|&v| !(v as f32).is_finite())
        {
            return Err(Error::InvalidArgument {
                op: "arange",
                what: "start, end and step",
                expected: "values within f32's range (a range of this dtype is computed in f32)",
                got: format!("{start}, {end}, {step} for dtype {dtype}"),
            });
        }
        let op = Op::Arange {
            start: Scalar {
                value: start,
                dtype: DType::F64,
            },
            step: Scalar {
                value: step,
                dtype: DType::F64,
            },
        };
        Tensor::lazy(op, &[], dtype, &[n as usize], *device)
    }

    /// Uniform values in [0, 1), reproducible from `seed` on every backend.
    pub fn rand(
        shape: impl Into<Shape>,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        Tensor::random("rand", shape.into(), seed, false, dtype, device)
    }

    /// Standard normal values, reproducible from `seed` on every backend.
    pub fn randn(
        shape: impl Into<Shape>,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        Tensor::random("randn", shape.into(), seed, true, dtype, device)
    }

    fn random(
        op: &'static str,
        shape: Shape,
        seed: u64,
        normal: bool,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        if !dtype.is_float() {
            return Err(Error::UnsupportedDType {
                op,
                dtype,
                why: "random values need a float dtype",
            });
        }
        if shape.numel() > u32::MAX as usize {
            return Err(Error::TooLarge { op, shape: shape.0 });
        }
        Tensor::lazy(Op::Rand { seed, normal }, &[], dtype, shape.dims(), *device)
    }

    /// Zeros with this tensor's shape and dtype.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape().to_vec(), self.dtype(), &self.device)
    }
}
