//! Device-to-device copies into an existing buffer, for
//! [`crate::Tensor::assign`] and so for optimiser steps and batch-norm
//! statistics kept in place. A copy is its own submission, queued after
//! the kernels submitted so far, so it sees their results and every view
//! of the destination sees its values.

use crate::backend::Storage;
use crate::error::{Error, Result};

use super::context::Gpu;
use super::exec::buffer_of;

/// `copy_buffer_to_buffer` moves whole 4-byte words.
const WORD: usize = wgpu::COPY_BUFFER_ALIGNMENT as usize;

/// Copies `len` elements of `src` from element `src_offset` over the first
/// `len` elements of `dst`. Device buffers hold every dtype padded to whole
/// words (see `transfer`), so a copy of the whole destination may round its
/// byte count up to the word: it then also copies the padding after the
/// last element, which nothing reads. A copy that starts inside a word, or
/// that would end inside one of the destination's elements, is refused
/// (`Tensor::assign` gives such a source a buffer of its own first).
pub(crate) fn copy_into(
    gpu: &Gpu,
    src: &Storage,
    src_offset: usize,
    dst: &Storage,
    len: usize,
) -> Result<()> {
    let op = "assign";
    let (from, to) = (buffer_of(src, op)?, buffer_of(dst, op)?);
    src.check_copy_into(op, src_offset, dst, len)?;
    let size = src.dtype().size_in_bytes();
    let start = src_offset * size;
    let bytes = len * size;
    let whole = bytes.div_ceil(WORD) * WORD;
    let aligned = start % WORD == 0 && (whole == bytes || len == dst.len());
    if !aligned {
        return Err(Error::Backend {
            op,
            message: format!(
                "wgpu copies whole {WORD}-byte words: cannot copy {len} {} elements from \
                 element {src_offset} into {} elements",
                src.dtype(),
                dst.len()
            ),
        });
    }
    if std::ptr::eq(from, to) {
        return Err(Error::Backend {
            op,
            message: "wgpu cannot copy within one buffer; give the source a buffer of its own"
                .into(),
        });
    }
    if whole == 0 {
        return Ok(());
    }
    gpu.scoped(op, whole as u64, || {
        let mut enc = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("fusegraph assign"),
            });
        enc.copy_buffer_to_buffer(from.raw(), start as u64, to.raw(), 0, whole as u64);
        gpu.queue.submit([enc.finish()]);
    })
}
