//! Native convolution nodes on the CPU. The CPU builds convolutions as
//! im2col + matmul, so it meets [`Body::Conv`] only when a test forces the
//! native op to check its graph plumbing and gradients; it runs the f64
//! definition, which is exact but not fast.
//!
//! [`Body::Conv`]: crate::schedule::kernel::Body::Conv

use crate::backend::cpu::CpuStorage;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::nn::conv_native::direct_f64;
use crate::schedule::kernel::ConvBody;

fn gather(s: &CpuStorage, l: &Layout) -> Vec<f64> {
    l.indices().into_iter().map(|i| s.get_f64(i)).collect()
}

/// The pass's output, rounded to `dtype`.
pub(crate) fn run_conv(c: &ConvBody, dtype: DType, args: &[&CpuStorage]) -> CpuStorage {
    let a = gather(args[0], &c.a);
    let b = gather(args[1], &c.b);
    let out = direct_f64(c.pass, c.geometry, c.x, c.w, c.y, &a, &b);
    CpuStorage::from_f64(dtype, &out)
}
