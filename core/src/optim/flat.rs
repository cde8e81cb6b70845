//! Parameters packed into one buffer per dtype and device, so that an
//! optimiser updates all of them with one fused kernel per state buffer
//! instead of one kernel per parameter and buffer. ResNet-18 has 62
//! parameters: SGD with momentum was 124 update kernels (and, in a step
//! kept in place, 124 copies back into the state buffers); packed it is a
//! gather of the gradients into one buffer, two update kernels and two
//! copies.
//!
//! Each parameter's value becomes a contiguous view of its group's buffer,
//! so layers read it as before; the gradients, which the backward pass
//! writes wherever it computes them, are gathered with one concat (one
//! kernel on targets that bind 64 buffers, a small tree where fewer are
//! allowed; see `passes::split_concat`). Members whose size is a multiple
//! of [`ALIGN`] elements come first, so their views start on an aligned
//! address, as library calls (cuBLAS, cuDNN) prefer.
//!
//! A parameter given a new value with [`Param::set`] no longer views its
//! group's buffer; the next step notices and packs the group again (a
//! value of another dtype, device or size is refused: its place in the
//! buffer no longer fits).

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::nn::Param;
use crate::tensor::Tensor;

/// Members whose element count is a multiple of this are packed first.
const ALIGN: usize = 64;

/// The parameters of one dtype and device.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub dtype: DType,
    pub device: Device,
    /// Indices into the optimiser's parameter list, in packing order.
    members: Vec<usize>,
    /// Element offset of each member in the group's buffer.
    offsets: Vec<usize>,
    pub numel: usize,
}

/// Where every parameter lives: the groups, and once packed their buffers.
#[derive(Debug, Clone)]
pub(crate) struct Packing {
    groups: Vec<Group>,
    /// One dense 1-D buffer per group, once packed.
    flats: Option<Vec<Tensor>>,
}

impl Packing {
    /// Plans the groups (nothing is realized or copied yet). Parameters
    /// without elements belong to no group: there is nothing to update.
    pub(crate) fn new(params: &[Param]) -> Packing {
        let mut groups: Vec<Group> = Vec::new();
        let mut order: Vec<usize> = (0..params.len()).collect();
        // Stable: aligned sizes first, the rest after, each in model order.
        order.sort_by_key(|&i| params[i].numel() % ALIGN != 0);
        for i in order {
            let v = params[i].value();
            if v.numel() == 0 {
                continue;
            }
            let (dtype, device) = (v.dtype(), *v.device());
            let at = groups
                .iter()
                .position(|g| g.dtype == dtype && g.device == device);
            let g = match at {
                Some(k) => &mut groups[k],
                None => {
                    groups.push(Group {
                        dtype,
                        device,
                        members: Vec::new(),
                        offsets: Vec::new(),
                        numel: 0,
                    });
                    let last = groups.len() - 1;
                    &mut groups[last]
                }
            };
            g.members.push(i);
            g.offsets.push(g.numel);
            g.numel += v.numel();
        }
        Packing {
            groups,
            flats: None,
        }
    }

    pub(crate) fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The group buffers, packing the parameters first where needed (the
    /// first step, or a parameter replaced since the last one).
    pub(crate) fn ensure(&mut self, params: &[Param]) -> Result<Vec<Tensor>> {
        let current = match &self.flats {
            Some(f) => self
                .groups
                .iter()
                .zip(f)
                .all(|(g, flat)| g.views_of(params, flat)),
            None => false,
        };
        if !current {
            let mut flats = Vec::with_capacity(self.groups.len());
            for g in &self.groups {
                g.check_members(params)?;
                let parts: Vec<Tensor> = g
                    .members
                    .iter()
                    .map(|&i| params[i].value().flatten())
                    .collect::<Result<_>>()?;
                let refs: Vec<&Tensor> = parts.iter().collect();
                // A buffer of the group's own: a copy where the concat of
                // a single member is a view of a larger buffer.
                flats.push(Tensor::concat(&refs, 0)?.to_owned_buffer()?);
            }
            self.install(params, flats)?;
        }
        Ok(self.flats.clone().unwrap_or_default())
    }

    /// Makes `flats` the group buffers and points every member at its view.
    pub(crate) fn install(&mut self, params: &[Param], flats: Vec<Tensor>) -> Result<()> {
        if flats.len() != self.groups.len() {
            return Err(Error::Backend {
                op: "optimizer",
                message: format!(
                    "{} parameter buffers for {} groups",
                    flats.len(),
                    self.groups.len()
                ),
            });
        }
        for (g, flat) in self.groups.iter().zip(&flats) {
            for (&i, &off) in g.members.iter().zip(&g.offsets) {
                let p = &params[i];
                let view = flat.narrow(0, off, p.numel())?.reshape(p.shape())?;
                p.set_realized(view);
            }
        }
        self.flats = Some(flats);
        Ok(())
    }

    /// The parameters' part of an optimiser's state: the group buffers
    /// once packed, else each parameter's value.
    pub(crate) fn values(&self, params: &[Param]) -> Vec<Tensor> {
        match &self.flats {
            Some(f) => f.clone(),
            None => params.iter().map(Param::value).collect(),
        }
    }

    /// Puts back what [`Packing::values`] gave, taking it from the front of
    /// `state` (already checked against the current state's shapes).
    pub(crate) fn restore(
        &mut self,
        params: &[Param],
        state: &mut impl Iterator<Item = Tensor>,
    ) -> Result<()> {
        if self.flats.is_some() {
            let flats: Vec<Tensor> = state.take(self.groups.len()).collect();
            return self.install(params, flats);
        }
        for (p, v) in params.iter().zip(state) {
            p.set(v)?;
        }
        Ok(())
    }

    /// The gradients of group `g`'s members, cast to its dtype and laid
    /// end to end in packing order, as one lazy 1-D tensor.
    pub(crate) fn gather(&self, g: usize, grads: &[Tensor]) -> Result<Tensor> {
        let group = &self.groups[g];
        let parts: Vec<Tensor> = group
            .members
            .iter()
            .map(|&i| grads[i].cast(group.dtype)?.reshape([grads[i].numel()]))
            .collect::<Result<_>>()?;
        if parts.len() == 1 {
            return Ok(parts[0].clone());
        }
        let refs: Vec<&Tensor> = parts.iter().collect();
        Tensor::concat(&refs, 0)
    }
}

impl Group {
    /// Refuses members whose dtype, device or size changed since the
    /// groups were planned (a parameter given a new value of another
    /// shape): their place in the buffer no longer fits.
    fn check_members(&self, params: &[Param]) -> Result<()> {
        for (k, &i) in self.members.iter().enumerate() {
            let v = params[i].value();
            let end = self.offsets.get(k + 1).copied().unwrap_or(self.numel);
            let fits = v.dtype() == self.dtype
                && *v.device() == self.device
                && v.numel() == end - self.offsets[k];
            if !fits {
                return Err(Error::InvalidArgument {
                    op: "optimizer",
                    what: "parameter",
                    expected: "the dtype, device and size it had when the optimiser was made",
                    got: format!(
                        "parameter {i}: {:?} {} of shape {:?}, planned as {} {} elements",
                        v.dtype(),
                        v.device().name(),
                        v.shape(),
                        self.dtype.name(),
                        end - self.offsets[k]
                    ),
                });
            }
        }
        Ok(())
    }

    /// True when every member's value is its view of `flat`.
    fn views_of(&self, params: &[Param], flat: &Tensor) -> bool {
        self.members.iter().zip(&self.offsets).all(|(&i, &off)| {
            let v = params[i].value();
            let l = v.layout();
            v.shares_storage(flat) && l.is_contiguous() && l.offset == off
        })
    }
}
