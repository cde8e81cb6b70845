//! Getting data out: `to_vec`, `item`, and ndarray interop (zero-copy on
//! the CPU where the layout allows).

use std::sync::Arc;

use ndarray::{ArrayD, IxDyn, ShapeBuilder};

use super::Tensor;
use crate::backend::cpu::access::Walk;
use crate::backend::cpu::storage::{try_to_vec, try_vec_with_capacity};
use crate::backend::cpu::CpuStorage;
use crate::backend::Storage;
use crate::device::Device;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::graph::node::{Node, State};
use crate::layout::Layout;

/// Host data of a realized tensor: shared when it already lives on the
/// host, a read-back copy when it lives on a GPU.
pub(crate) enum HostData {
    Shared(Arc<Storage>),
    Copied(CpuStorage),
}

impl HostData {
    pub(crate) fn get(&self) -> &CpuStorage {
        match self {
            HostData::Copied(s) => s,
            HostData::Shared(s) => match s.as_ref() {
                Storage::Cpu(c) => c,
                // `host_data` only shares host storage.
                Storage::Device { .. } => unreachable!("device storage is always copied"),
            },
        }
    }
}

impl Tensor {
    /// Realizes the tensor and returns its storage.
    pub(crate) fn realized_storage(&self) -> Result<Arc<Storage>> {
        if let State::Ready(s) = self.node.state() {
            return Ok(s);
        }
        self.realize()?;
        self.node.storage().ok_or(Error::Backend {
            op: "realize",
            message: "result was not recorded".into(),
        })
    }

    /// Realizes the tensor and returns its storage on the host (reading a
    /// GPU buffer back, which waits for the kernels that write it).
    pub(crate) fn host_data(&self) -> Result<HostData> {
        let storage = self.realized_storage()?;
        match storage.as_ref() {
            Storage::Cpu(_) => Ok(HostData::Shared(storage)),
            Storage::Device { .. } => Ok(HostData::Copied(storage.to_cpu()?)),
        }
    }

    /// This tensor's values on `device` (realized, then copied; the same
    /// tensor when it is already there).
    pub fn to_device(&self, device: &Device) -> Result<Tensor> {
        if self.device == *device {
            return Ok(self.clone());
        }
        // Moving into or out of Auto shares the buffer when it is already
        // in a place the target accepts (any place, for Auto).
        if *device == Device::Auto || self.device == Device::Auto {
            let storage = self.realized_storage()?;
            if *device == Device::Auto || storage.device() == *device {
                let len = storage.len();
                return Ok(Tensor {
                    node: Node::new(
                        self.dtype(),
                        self.layout().clone(),
                        len,
                        State::Ready(storage),
                    ),
                    device: *device,
                });
            }
        }
        let host = self.host_data()?;
        if !device.is_cpu() {
            // Upload straight from the host buffer: no intermediate copy.
            let storage = crate::backend::get(*device)?.upload(host.get())?;
            return Tensor::from_device_storage_with_layout(
                storage,
                self.layout().clone(),
                *device,
            );
        }
        Tensor::from_storage(host.get().clone(), self.layout().clone(), *device)
    }

    fn check_type<T: Element>(&self, op: &'static str) -> Result<()> {
        if T::DTYPE != self.dtype() {
            return Err(Error::ElementType {
                op,
                requested: T::DTYPE,
                actual: self.dtype(),
            });
        }
        Ok(())
    }

    /// The elements in row-major order. `T` must be the tensor's dtype
    /// (use [`Tensor::cast`] first to convert).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.check_type::<T>("to_vec")?;
        let host = self.host_data()?;
        let l = self.layout();
        // A read-back copy that is exactly the tensor is handed over as it is.
        let host = match host {
            HostData::Copied(c) if l.is_contiguous() && l.offset == 0 && c.len() == l.numel() => {
                return T::into_vec(c).map_err(|c| Error::ElementType {
                    op: "to_vec",
                    requested: T::DTYPE,
                    actual: c.dtype(),
                })
            }
            other => other,
        };
        let storage = host.get();
        let data = T::slice(storage).ok_or(Error::ElementType {
            op: "to_vec",
            requested: T::DTYPE,
            actual: storage.dtype(),
        })?;
        let n = l.checked_numel("to_vec")?;
        if l.is_contiguous() {
            return try_to_vec("to_vec", &data[l.offset..l.offset + n]);
        }
        let mut out = try_vec_with_capacity("to_vec", n)?;
        Walk::new(l).runs(0, n, |_, idx, len, stride| {
            out.extend((0..len).map(|j| data[(idx + j as isize * stride) as usize]));
        });
        Ok(out)
    }

    /// Realizes the tensor and hands its elements (row-major, `T` = its
    /// dtype) to `f`: borrowed in place when the layout is contiguous on the
    /// host, so a binding copies them once, straight into its own buffer;
    /// gathered into a vector first otherwise.
    pub fn with_slice<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        self.check_type::<T>("with_slice")?;
        let l = self.layout();
        if !l.is_contiguous() {
            return Ok(f(&self.to_vec::<T>()?));
        }
        let host = self.host_data()?;
        let storage = host.get();
        let data = T::slice(storage).ok_or(Error::ElementType {
            op: "with_slice",
            requested: T::DTYPE,
            actual: storage.dtype(),
        })?;
        Ok(f(&data[l.offset..l.offset + l.numel()]))
    }

    /// The elements converted to f64, in row-major order.
    pub fn to_vec_f64(&self) -> Result<Vec<f64>> {
        let host = self.host_data()?;
        Ok(host.get().gather_f64(&self.layout().indices()))
    }

    /// The single element of a one-element tensor.
    pub fn item<T: Element>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::NotScalar {
                op: "item",
                shape: self.shape().to_vec(),
            });
        }
        let v = self.to_vec::<T>()?;
        v.first().copied().ok_or(Error::NotScalar {
            op: "item",
            shape: self.shape().to_vec(),
        })
    }

    /// Takes ownership of an ndarray without copying: its buffer becomes the
    /// tensor's storage and its strides (also negative ones) the layout.
    pub fn from_ndarray<T: Element>(array: ArrayD<T>) -> Result<Tensor> {
        let shape = array.shape().to_vec();
        let strides = array.strides().to_vec();
        let (data, offset) = array.into_raw_vec_and_offset();
        let offset = offset.unwrap_or(0);
        let layout = Layout::as_strided(&shape, &strides, offset, data.len())?;
        Tensor::from_storage(T::into_storage(data), layout, Device::Cpu)
    }

    /// Copies an ndarray view (any layout) into a new tensor.
    pub fn from_ndarray_view<T: Element>(
        array: ndarray::ArrayViewD<'_, T>,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = array.shape().to_vec();
        Tensor::from_vec(array.iter().copied().collect(), shape, device)
    }

    /// The values as an ndarray. Shares nothing with the tensor (a copy of
    /// the viewed elements, keeping the layout's strides when they are
    /// non-negative). Use [`Tensor::into_ndarray`] to avoid the copy.
    pub fn to_ndarray<T: Element>(&self) -> Result<ArrayD<T>> {
        let v = self.to_vec::<T>()?;
        ArrayD::from_shape_vec(IxDyn(self.shape()), v).map_err(|e| Error::Backend {
            op: "to_ndarray",
            message: e.to_string(),
        })
    }

    /// The values as an ndarray, moving the storage out without a copy when
    /// this tensor is its only owner and ndarray accepts the layout (offset 0,
    /// no negative or zero strides); otherwise a copy.
    pub fn into_ndarray<T: Element>(self) -> Result<ArrayD<T>> {
        self.check_type::<T>("into_ndarray")?;
        if !self.device.is_cpu() {
            return self.to_ndarray();
        }
        drop(self.realized_storage()?);
        let layout = self.layout().clone();
        let device = self.device;
        let movable = layout.offset == 0
            && layout
                .strides
                .iter()
                .zip(&layout.shape)
                .all(|(&s, &d)| s > 0 || d <= 1);
        let node = match Arc::try_unwrap(self.node) {
            Ok(node) if movable => node,
            Ok(node) => {
                return Tensor {
                    node: Arc::new(node),
                    device,
                }
                .to_ndarray()
            }
            Err(node) => return Tensor { node, device }.to_ndarray(),
        };
        let State::Ready(storage) = node.into_state() else {
            return Err(Error::Backend {
                op: "into_ndarray",
                message: "tensor was not realized".into(),
            });
        };
        let owned = match Arc::try_unwrap(storage) {
            Ok(Storage::Cpu(s)) => s,
            Ok(other) => other.to_cpu()?,
            Err(shared) => shared.to_cpu()?,
        };
        let vec = T::into_vec(owned).map_err(|s| Error::ElementType {
            op: "into_ndarray",
            requested: T::DTYPE,
            actual: s.dtype(),
        })?;
        let strides: Vec<usize> = layout.strides.iter().map(|&s| s.max(0) as usize).collect();
        match ArrayD::from_shape_vec(IxDyn(&layout.shape).strides(IxDyn(&strides)), vec) {
            Ok(a) => Ok(a),
            Err(_) => Err(Error::Backend {
                op: "into_ndarray",
                message: format!("ndarray rejected layout {layout:?}"),
            }),
        }
    }
}
