//! 2-D convolution as im2col + matmul on the graph: the patches are an
//! `as_strided` view of the (zero-padded) input, so forming them costs one
//! copy, the product runs on the backend's matmul (cuBLASLt on CUDA, the
//! tiled kernels elsewhere) with the bias as an epilogue, and autograd
//! differentiates the whole thing through its views.

use super::conv_native;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::op::{ConvGeometry, ConvPass};
use crate::tensor::Tensor;

/// Where the channel axis sits in a 4-D activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataLayout {
    /// `[N, C, H, W]` (PyTorch's default).
    #[default]
    Nchw,
    /// `[N, H, W, C]` (channels last).
    Nhwc,
}

/// Stride, zero padding and dilation of a 2-D convolution or pooling
/// window, per spatial axis `(h, w)`, and the activation layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conv2dOptions {
    pub stride: (usize, usize),
    pub padding: (usize, usize),
    pub dilation: (usize, usize),
    pub layout: DataLayout,
}

impl Default for Conv2dOptions {
    fn default() -> Self {
        Conv2dOptions {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            layout: DataLayout::Nchw,
        }
    }
}

impl Conv2dOptions {
    pub fn stride(mut self, s: usize) -> Self {
        self.stride = (s, s);
        self
    }
    pub fn padding(mut self, p: usize) -> Self {
        self.padding = (p, p);
        self
    }
    pub fn dilation(mut self, d: usize) -> Self {
        self.dilation = (d, d);
        self
    }
    pub fn layout(mut self, layout: DataLayout) -> Self {
        self.layout = layout;
        self
    }

    /// Output size of one spatial axis.
    pub(crate) fn out_size(
        op: &'static str,
        size: usize,
        k: usize,
        s: usize,
        p: usize,
        d: usize,
    ) -> Result<usize> {
        let span = d * (k.max(1) - 1) + 1;
        if s == 0 || d == 0 || k == 0 || size + 2 * p < span {
            return Err(Error::InvalidArgument {
                op,
                what: "window",
                expected:
                    "stride, dilation and kernel >= 1 and a window that fits the padded input",
                got: format!("input {size}, kernel {k}, stride {s}, padding {p}, dilation {d}"),
            });
        }
        Ok((size + 2 * p - span) / s + 1)
    }
}

impl Tensor {
    /// 2-D cross-correlation (PyTorch's `conv2d`, no groups). `weight` is
    /// `[out_channels, in_channels, kh, kw]` for either activation layout;
    /// `bias` is `[out_channels]`. The result has the input's layout.
    ///
    /// On a backend with a native convolution (cuDNN on CUDA) this is one
    /// graph node per pass, forward and backward; elsewhere it is im2col +
    /// matmul.
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        opts: Conv2dOptions,
    ) -> Result<Tensor> {
        let dtype = DType::promote(self.dtype(), weight.dtype());
        let native = conv_native::available(self.device, dtype);
        self.conv2d_as(weight, bias, opts, native)
    }

    /// [`Tensor::conv2d`] with the native op (`native`) or im2col chosen by
    /// the caller; tests force the native op on the CPU with it.
    pub(crate) fn conv2d_as(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        opts: Conv2dOptions,
        native: bool,
    ) -> Result<Tensor> {
        let op = "conv2d";
        if self.rank() != 4 || weight.rank() != 4 {
            return Err(Error::InvalidArgument {
                op,
                what: "input and weight",
                expected: "rank 4",
                got: format!("input {:?}, weight {:?}", self.shape(), weight.shape()),
            });
        }
        let (o, c, kh, kw) = (
            weight.shape()[0],
            weight.shape()[1],
            weight.shape()[2],
            weight.shape()[3],
        );
        let x = to_nhwc(self, opts.layout)?;
        let (n, cin) = (x.shape()[0], x.shape()[3]);
        if cin != c {
            return Err(Error::InvalidArgument {
                op,
                what: "channels",
                expected: "input channels equal to weight.shape[1]",
                got: format!(
                    "input {:?} ({:?}), weight {:?}",
                    self.shape(),
                    opts.layout,
                    weight.shape()
                ),
            });
        }
        if let Some(b) = bias {
            if b.shape() != [o] {
                return Err(Error::InvalidArgument {
                    op,
                    what: "bias",
                    expected: "shape [out_channels]",
                    got: format!("{:?} for weight {:?}", b.shape(), weight.shape()),
                });
            }
        }
        if native {
            let (h, w) = (x.shape()[1], x.shape()[2]);
            let oh =
                Conv2dOptions::out_size(op, h, kh, opts.stride.0, opts.padding.0, opts.dilation.0)?;
            let ow =
                Conv2dOptions::out_size(op, w, kw, opts.stride.1, opts.padding.1, opts.dilation.1)?;
            let dtype = DType::promote(x.dtype(), weight.dtype());
            let geometry = ConvGeometry {
                stride: [opts.stride.0, opts.stride.1],
                padding: [opts.padding.0, opts.padding.1],
                dilation: [opts.dilation.0, opts.dilation.1],
            };
            let w = weight.permute(&[0, 2, 3, 1])?.cast(dtype)?;
            let (x, w) = pad_channels_for_tensor_cores(&x.cast(dtype)?, &w)?;
            let mut y = conv_native::pass(ConvPass::Forward, geometry, &x, &w, [n, oh, ow, o])?;
            if let Some(b) = bias {
                y = y.add(b)?;
            }
            return from_nhwc(&y, opts.layout);
        }
        let (patches, oh, ow) = patches_nhwc(op, &x, (kh, kw), opts, 0.0)?;
        // [n, oh, ow, kh, kw, c] -> [n*oh*ow, kh*kw*c]
        let cols = patches.reshape([n * oh * ow, kh * kw * c])?;
        let wmat = weight.permute(&[0, 2, 3, 1])?.reshape([o, kh * kw * c])?;
        let mut y = cols.matmul(&wmat.t()?)?;
        if let Some(b) = bias {
            y = y.add(b)?;
        }
        from_nhwc(&y.reshape([n, oh, ow, o])?, opts.layout)
    }
}

/// Channels a half-precision convolution is padded to a multiple of.
const TENSOR_CORE_CHANNELS: usize = 8;

/// `x` `[N, H, W, C]` and `w` `[O, KH, KW, C]` with zero channels appended
/// up to a multiple of 8 when they are f16 or bf16. Tensor cores read
/// channels 16 bytes at a time, so for a 3-channel input (an image
/// network's stem) cuDNN falls back to kernels without them: ResNet-18's
/// stem ran at 3.4 TFLOP/s on an H100. Zero channels add exact zeros to
/// every sum, and autograd slices the padding off the gradients.
pub(crate) fn pad_channels_for_tensor_cores(x: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor)> {
    let c = x.shape()[3];
    let half = matches!(x.dtype(), DType::F16 | DType::BF16);
    if !half || c % TENSOR_CORE_CHANNELS == 0 {
        return Ok((x.clone(), w.clone()));
    }
    let extra = c.next_multiple_of(TENSOR_CORE_CHANNELS) - c;
    let pad = |t: &Tensor| -> Result<Tensor> {
        let mut shape = t.shape().to_vec();
        shape[3] = extra;
        let zeros = Tensor::zeros(shape, t.dtype(), t.device())?;
        Tensor::concat(&[t, &zeros], 3)
    };
    Ok((pad(x)?, pad(w)?))
}

/// The activation as `[N, H, W, C]` (a permuted view for NCHW).
pub(crate) fn to_nhwc(x: &Tensor, layout: DataLayout) -> Result<Tensor> {
    match layout {
        DataLayout::Nhwc => Ok(x.clone()),
        DataLayout::Nchw => x.permute(&[0, 2, 3, 1]),
    }
}

/// `[N, H, W, C]` back to `layout` (a permuted view for NCHW).
pub(crate) fn from_nhwc(x: &Tensor, layout: DataLayout) -> Result<Tensor> {
    match layout {
        DataLayout::Nhwc => Ok(x.clone()),
        DataLayout::Nchw => x.permute(&[0, 3, 1, 2]),
    }
}

/// Windows of an NHWC tensor as a `[N, OH, OW, KH, KW, C]` view of its
/// padded copy (`pad_value` outside the input), and the output size.
pub(crate) fn patches_nhwc(
    op: &'static str,
    x: &Tensor,
    (kh, kw): (usize, usize),
    opts: Conv2dOptions,
    pad_value: f64,
) -> Result<(Tensor, usize, usize)> {
    let (n, h, w, c) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (sh, sw) = opts.stride;
    let (ph, pw) = opts.padding;
    let (dh, dw) = opts.dilation;
    let oh = Conv2dOptions::out_size(op, h, kh, sh, ph, dh)?;
    let ow = Conv2dOptions::out_size(op, w, kw, sw, pw, dw)?;
    let padded = pad_hw(x, ph, pw, pad_value)?.contiguous()?;
    let (hp, wp) = (h + 2 * ph, w + 2 * pw);
    let base = padded.layout().offset;
    let (c_, wp_, hp_) = (c as isize, wp as isize, hp as isize);
    let strides = [
        hp_ * wp_ * c_,
        sh as isize * wp_ * c_,
        sw as isize * c_,
        dh as isize * wp_ * c_,
        dw as isize * c_,
        1,
    ];
    let view = padded.as_strided(&[n, oh, ow, kh, kw, c], &strides, base)?;
    Ok((view, oh, ow))
}

/// Pads axes 1 and 2 of an NHWC tensor with `value` on both sides.
fn pad_hw(x: &Tensor, ph: usize, pw: usize, value: f64) -> Result<Tensor> {
    let mut y = x.clone();
    for (axis, p) in [(1usize, ph), (2, pw)] {
        if p == 0 {
            continue;
        }
        let mut s = y.shape().to_vec();
        s[axis] = p;
        let edge = Tensor::full(value, s, y.dtype(), y.device())?;
        y = Tensor::concat(&[&edge, &y, &edge], axis as isize)?;
    }
    Ok(y)
}
