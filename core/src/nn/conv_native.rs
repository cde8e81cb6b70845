//! Convolution as one graph op, for backends that convolve natively
//! (cuDNN on CUDA): forward, backward-data and backward-filter are
//! [`Op::Conv2d`] nodes with [`ConvPass`], whose gradients are the other
//! two passes. The backend reads the activation's windows in place, so no
//! padded copy and no im2col matrix is ever written; the other backends
//! keep im2col + matmul (`conv.rs`), where the matmul is what they do best.
//!
//! The direct loop at the bottom is the f64 definition all three passes
//! are checked against, and what the CPU runs when a test forces the op.

use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::op::{ConvGeometry, ConvPass, Op};
use crate::tensor::Tensor;

/// `FUSEGRAPH_NATIVE_CONV=1` builds conv nodes on every device, for
/// kernel plans (`train_bench --plan`) and tests: the CPU then runs them
/// with its exact but slow loop.
fn forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var("FUSEGRAPH_NATIVE_CONV").is_ok_and(|v| v == "1"))
}

/// True when `device` convolves `dtype` natively (its backend sets
/// `Limits::native_conv2d`; the CPU and WebGPU do not).
pub(crate) fn available(device: Device, dtype: DType) -> bool {
    // No wasm backend convolves natively (this does not shrink the wasm
    // builds: the conv arms of the graph's matches stay).
    if cfg!(target_arch = "wasm32") || !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
        return false;
    }
    if forced() {
        return true;
    }
    match device {
        Device::Cuda(_) | Device::Wgpu => crate::backend::get(device)
            .map(|b| b.limits().native_conv2d)
            .unwrap_or(false),
        Device::Cpu | Device::Auto => false,
    }
}

/// One pass as a lazy node: `a` and `b` are its inputs (see [`ConvPass`]),
/// made contiguous first, and `out` the shape it produces.
pub(crate) fn pass(
    pass: ConvPass,
    geometry: ConvGeometry,
    a: &Tensor,
    b: &Tensor,
    out: [usize; 4],
) -> Result<Tensor> {
    let (a, b) = (a.contiguous()?, b.contiguous()?);
    let device = Tensor::same_device(pass.name(), &a, &b)?;
    Tensor::lazy(
        Op::Conv2d { pass, geometry },
        &[&a, &b],
        a.dtype(),
        &out,
        device,
    )
}

fn dims(t: &Tensor) -> [usize; 4] {
    let s = t.shape();
    [s[0], s[1], s[2], s[3]]
}

/// Gradients of a pass's two inputs given the gradient `g` of its output.
/// Each pass is linear in each input, and the adjoint of one pass in one
/// input is another pass: `<g, conv(x, w)> = <bwd_data(g, w), x> =
/// <bwd_filter(x, g), w>`.
pub(crate) fn vjp(
    p: ConvPass,
    geometry: ConvGeometry,
    ins: &[Tensor],
    g: &Tensor,
    want: [bool; 2],
) -> Result<Vec<Option<Tensor>>> {
    let (a, b) = (&ins[0], &ins[1]);
    let (da, db) = match p {
        // y = conv(x, w)
        ConvPass::Forward => (
            want[0]
                .then(|| pass(ConvPass::BackwardData, geometry, g, b, dims(a)))
                .transpose()?,
            want[1]
                .then(|| pass(ConvPass::BackwardFilter, geometry, a, g, dims(b)))
                .transpose()?,
        ),
        // dx = bwd_data(dy, w)
        ConvPass::BackwardData => (
            want[0]
                .then(|| pass(ConvPass::Forward, geometry, g, b, dims(a)))
                .transpose()?,
            want[1]
                .then(|| pass(ConvPass::BackwardFilter, geometry, g, a, dims(b)))
                .transpose()?,
        ),
        // dw = bwd_filter(x, dy)
        ConvPass::BackwardFilter => (
            want[0]
                .then(|| pass(ConvPass::BackwardData, geometry, b, g, dims(a)))
                .transpose()?,
            want[1]
                .then(|| pass(ConvPass::Forward, geometry, a, g, dims(b)))
                .transpose()?,
        ),
    };
    Ok(vec![da, db])
}

/// The shapes `(x, w, y)` a pass works on, from its inputs and output.
pub(crate) fn operand_shapes(
    p: ConvPass,
    a: [usize; 4],
    b: [usize; 4],
    out: [usize; 4],
) -> ([usize; 4], [usize; 4], [usize; 4]) {
    match p {
        ConvPass::Forward => (a, b, out),
        ConvPass::BackwardData => (out, b, a),
        ConvPass::BackwardFilter => (a, out, b),
    }
}

/// The f64 definition of a pass over contiguous NHWC / `[o, kh, kw, c]`
/// data: `a` and `b` are its inputs, the result is its output. One loop
/// nest visits every (output pixel, filter tap) pair; the three passes
/// differ only in which two of (x, w, y) they read and which they write.
#[allow(clippy::too_many_arguments)]
pub(crate) fn direct_f64(
    p: ConvPass,
    geo: ConvGeometry,
    x: [usize; 4],
    w: [usize; 4],
    y: [usize; 4],
    a: &[f64],
    b: &[f64],
) -> Vec<f64> {
    let [n, h, wd, c] = x;
    let [o, kh, kw, _] = w;
    let [_, oh, ow, _] = y;
    let out_len = match p {
        ConvPass::Forward => y.iter().product(),
        ConvPass::BackwardData => x.iter().product(),
        ConvPass::BackwardFilter => w.iter().product::<usize>(),
    };
    let mut out = vec![0.0; out_len];
    let xi = |b_: usize, r: usize, s: usize, ch: usize| ((b_ * h + r) * wd + s) * c + ch;
    let wi = |oc: usize, i: usize, j: usize, ch: usize| ((oc * kh + i) * kw + j) * c + ch;
    let yi = |b_: usize, r: usize, s: usize, oc: usize| ((b_ * oh + r) * ow + s) * o + oc;
    let coord = |out_pos: usize, tap: usize, axis: usize| -> Option<usize> {
        let v = (out_pos * geo.stride[axis] + tap * geo.dilation[axis]) as isize
            - geo.padding[axis] as isize;
        let limit = if axis == 0 { h } else { wd };
        (v >= 0 && (v as usize) < limit).then_some(v as usize)
    };
    for b_ in 0..n {
        for r in 0..oh {
            for s in 0..ow {
                for i in 0..kh {
                    let Some(ir) = coord(r, i, 0) else { continue };
                    for j in 0..kw {
                        let Some(is) = coord(s, j, 1) else { continue };
                        for oc in 0..o {
                            for ch in 0..c {
                                let (xp, wp, yp) =
                                    (xi(b_, ir, is, ch), wi(oc, i, j, ch), yi(b_, r, s, oc));
                                match p {
                                    ConvPass::Forward => out[yp] += a[xp] * b[wp],
                                    ConvPass::BackwardData => out[xp] += a[yp] * b[wp],
                                    ConvPass::BackwardFilter => out[wp] += a[xp] * b[yp],
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd;
    use crate::nn::{Conv2dOptions, DataLayout};

    const CPU: Device = Device::Cpu;

    fn randn(shape: &[usize], seed: u64) -> Tensor {
        Tensor::randn(shape.to_vec(), seed, DType::F64, &CPU).expect("randn")
    }

    fn close(what: &str, a: &Tensor, b: &Tensor) {
        let (a, b) = (a.to_vec_f64().expect("a"), b.to_vec_f64().expect("b"));
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                (x - y).abs() <= 1e-10 * (1.0 + y.abs()),
                "{what}[{i}]: native {x} vs im2col {y}"
            );
        }
    }

    /// The native passes, forced on the CPU, give im2col's values and
    /// gradients for strides, padding, dilation, both layouts and a bias.
    #[test]
    fn native_passes_match_im2col() {
        let geometries = [
            Conv2dOptions::default().padding(1),
            Conv2dOptions::default().stride(2).padding(1),
            Conv2dOptions {
                stride: (2, 1),
                padding: (0, 2),
                dilation: (1, 2),
                layout: DataLayout::Nchw,
            },
        ];
        for (case, base) in geometries.into_iter().enumerate() {
            for layout in [DataLayout::Nchw, DataLayout::Nhwc] {
                let opts = base.layout(layout);
                let xs = match layout {
                    DataLayout::Nchw => [2, 3, 7, 6],
                    DataLayout::Nhwc => [2, 7, 6, 3],
                };
                let seed = 10 * case as u64;
                let x = randn(&xs, seed + 1).requires_grad();
                let w = randn(&[4, 3, 3, 2], seed + 2).requires_grad();
                let b = randn(&[4], seed + 3).requires_grad();
                let run = |native: bool| {
                    let y = x.conv2d_as(&w, Some(&b), opts, native).expect("conv2d");
                    let r = randn(y.shape(), seed + 4);
                    let loss = y.mul(&r).expect("mul").sum(&[], false).expect("sum");
                    let grads = autograd::grad(&loss, &[&x, &w, &b]).expect("grad");
                    (y, grads)
                };
                let (yn, gn) = run(true);
                let (yi, gi) = run(false);
                let what = format!("{opts:?}");
                close(&format!("{what} y"), &yn, &yi);
                for (k, name) in ["dx", "dw", "db"].iter().enumerate() {
                    close(&format!("{what} {name}"), &gn[k], &gi[k]);
                }
            }
        }
    }

    /// A half-precision input with 3 channels is padded to 8 for the
    /// native pass (tensor cores); values and gradients, sliced back to 3
    /// channels, are those of the unpadded passes on the same values (zero
    /// channels add exact zeros, so they agree to the last bit).
    #[test]
    fn half_precision_inputs_pad_channels_without_changing_results() {
        let opts = Conv2dOptions::default().padding(1).layout(DataLayout::Nhwc);
        let geometry = ConvGeometry {
            stride: [1, 1],
            padding: [1, 1],
            dilation: [1, 1],
        };
        let bf16 = |t: Tensor| t.cast(DType::BF16).expect("bf16");
        let x = bf16(randn(&[2, 5, 4, 3], 61)).requires_grad();
        let w = bf16(randn(&[6, 3, 3, 3], 62)).requires_grad();
        let r = bf16(randn(&[2, 5, 4, 6], 63));
        let y = x.conv2d_as(&w, None, opts, true).expect("conv2d");
        let loss = y.mul(&r).expect("mul").sum(&[], false).expect("sum");
        let g = autograd::grad(&loss, &[&x, &w]).expect("grad");
        // The same passes without padding; the weight as [O, KH, KW, C].
        let w_nhwc = w.permute(&[0, 2, 3, 1]).expect("permute");
        let y_ref = pass(ConvPass::Forward, geometry, &x, &w_nhwc, [2, 5, 4, 6]).expect("fwd");
        let dx_ref = pass(ConvPass::BackwardData, geometry, &r, &w_nhwc, [2, 5, 4, 3]).expect("dx");
        let dw_ref = pass(ConvPass::BackwardFilter, geometry, &x, &r, [6, 3, 3, 3])
            .and_then(|d| d.permute(&[0, 3, 1, 2]))
            .expect("dw");
        assert_eq!(
            (g[0].shape(), g[1].shape()),
            (&[2, 5, 4, 3][..], &[6, 3, 3, 3][..])
        );
        for (what, a, b) in [
            ("y", &y, &y_ref),
            ("dx", &g[0], &dx_ref),
            ("dw", &g[1], &dw_ref),
        ] {
            let (a, b) = (a.to_vec_f64().expect("a"), b.to_vec_f64().expect("b"));
            assert_eq!(a.len(), b.len(), "{what}: lengths");
            for (i, (p, q)) in a.iter().zip(&b).enumerate() {
                // One bf16 rounding apart at most (2^-8 of the value).
                assert!(
                    (p - q).abs() <= 2f64.powi(-8) * q.abs(),
                    "{what}[{i}]: padded {p} vs {q}"
                );
            }
        }
        let (xp, wp) = crate::nn::conv::pad_channels_for_tensor_cores(&x, &w_nhwc).expect("pad");
        assert_eq!((xp.shape()[3], wp.shape()[3]), (8, 8));
        let padding = xp.narrow(3, 3, 5).expect("n").to_vec_f64().expect("v");
        assert!(
            padding.iter().all(|&v| v == 0.0),
            "padding channels are zero"
        );
    }

    /// A small network (conv, batch norm, ReLU, strided conv, residual
    /// add) trains to the same gradients with native conv nodes as with
    /// im2col: the conv kernels sit among fused maps and reductions in one
    /// schedule, forward and backward, under CUDA's fusion limits.
    #[test]
    fn native_convs_schedule_among_fused_kernels() {
        use crate::nn::BatchNorm2d;
        let nhwc = DataLayout::Nhwc;
        let x = randn(&[2, 6, 6, 4], 51);
        let w1 = randn(&[4, 4, 3, 3], 52).requires_grad();
        let w2 = randn(&[4, 4, 3, 3], 53).requires_grad();
        let run = |native: bool| {
            let bn = BatchNorm2d::new(4, nhwc, &CPU).expect("bn");
            let opts = Conv2dOptions::default().padding(1).layout(nhwc);
            let h = x.conv2d_as(&w1, None, opts, native).expect("conv1");
            let h = bn.forward(&h, true).expect("bn").relu().expect("relu");
            let h2 = h
                .conv2d_as(&w2, None, opts.stride(2), native)
                .expect("conv2");
            let y = h2
                .add(&h.narrow(1, 0, 3).expect("n").narrow(2, 0, 3).expect("n"))
                .expect("add");
            let loss = y.mul(&y).expect("sq").sum(&[], false).expect("sum");
            let mut outs = autograd::grad(&loss, &[&w1, &w2]).expect("grad");
            outs.push(loss);
            let limits = crate::passes::Limits {
                split_long_reductions: true,
                split_column_reductions: true,
                ..crate::passes::Limits::cpu()
            };
            let compiled = crate::runtime::compiled_for(&outs, &limits).expect("compile");
            let convs = compiled
                .schedule
                .steps
                .iter()
                .filter(|s| matches!(s.kernel.body, crate::schedule::Body::Conv(_)))
                .count();
            Tensor::realize_all(&outs).expect("realize");
            (outs, convs)
        };
        let (native, convs) = run(true);
        let (im2col, none) = run(false);
        // Two forward passes; backward-data for the second conv only (the
        // first's input is data), backward-filter for both.
        assert_eq!((convs, none), (5, 0), "conv kernels in the schedule");
        for (k, name) in ["dw1", "dw2", "loss"].iter().enumerate() {
            close(name, &native[k], &im2col[k]);
        }
    }

    /// The backward passes are themselves differentiable (double
    /// backward): each is bilinear, so a finite difference is exact up to
    /// rounding and checks the gradient the other passes give.
    #[test]
    fn backward_passes_have_gradients() {
        let geometry = ConvGeometry {
            stride: [2, 1],
            padding: [1, 0],
            dilation: [1, 2],
        };
        let (xs, ws, ys) = ([1, 5, 6, 2], [3, 2, 2, 2], [1, 3, 4, 3]);
        for (p, a_shape, b_shape, out) in [
            (ConvPass::BackwardData, ys, ws, xs),
            (ConvPass::BackwardFilter, xs, ys, ws),
        ] {
            let a = randn(&a_shape, 31).requires_grad();
            let b = randn(&b_shape, 32).requires_grad();
            let r = randn(&out, 33);
            let loss = |a: &Tensor, b: &Tensor| {
                pass(p, geometry, a, b, out)
                    .and_then(|o| o.mul(&r))
                    .and_then(|o| o.sum(&[], false))
                    .expect("loss")
            };
            let grads = autograd::grad(&loss(&a, &b), &[&a, &b]).expect("grad");
            let base = loss(&a, &b).to_vec_f64().expect("base")[0];
            for (which, t) in [&a, &b].into_iter().enumerate() {
                let g = grads[which].to_vec_f64().expect("grad values");
                let values = t.to_vec_f64().expect("values");
                for i in (0..values.len()).step_by(5) {
                    let mut bumped = values.clone();
                    bumped[i] += 1.0;
                    let t2 = Tensor::from_vec(bumped, t.shape().to_vec(), &CPU).expect("bump");
                    let l = if which == 0 {
                        loss(&t2, &b)
                    } else {
                        loss(&a, &t2)
                    };
                    let fd = l.to_vec_f64().expect("fd")[0] - base;
                    assert!(
                        (fd - g[i]).abs() < 1e-9 * (1.0 + fd.abs()),
                        "{p:?} input {which} [{i}]: grad {} vs difference {fd}",
                        g[i]
                    );
                }
            }
        }
    }
}
