//! The one error type of `fusegraph-core`. Every variant names the op and the
//! shapes or dtypes involved, so a message read in a log says what to fix.

use crate::dtype::DType;

/// Everything that can go wrong in fusegraph-core.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("{op}: cannot broadcast {lhs:?} with {rhs:?}")]
    Broadcast {
        op: &'static str,
        lhs: Vec<usize>,
        rhs: Vec<usize>,
    },

    #[error("{op}: shape {shape:?} has {expected} elements but {got} values were given")]
    ElementCount {
        op: &'static str,
        shape: Vec<usize>,
        expected: usize,
        got: usize,
    },

    #[error(
        "{op}: cannot reshape {from:?} ({from_elems} elements) into {to:?} ({to_elems} elements)"
    )]
    Reshape {
        op: &'static str,
        from: Vec<usize>,
        from_elems: usize,
        to: Vec<usize>,
        to_elems: usize,
    },

    #[error("{op}: axis {axis} is out of range for a tensor of rank {rank} (shape {shape:?})")]
    AxisOutOfRange {
        op: &'static str,
        axis: isize,
        rank: usize,
        shape: Vec<usize>,
    },

    #[error("{op}: axes {axes:?} are not a permutation of 0..{rank} (shape {shape:?})")]
    BadPermutation {
        op: &'static str,
        axes: Vec<usize>,
        rank: usize,
        shape: Vec<usize>,
    },

    #[error("{op}: axis {axis} appears more than once in {axes:?}")]
    DuplicateAxis {
        op: &'static str,
        axis: usize,
        axes: Vec<usize>,
    },

    #[error("{op}: range start {start} + length {len} exceeds size {size} of axis {axis} (shape {shape:?})")]
    NarrowOutOfRange {
        op: &'static str,
        axis: usize,
        start: usize,
        len: usize,
        size: usize,
        shape: Vec<usize>,
    },

    #[error("{op}: cannot expand {from:?} to {to:?}: only size-1 axes can grow")]
    Expand {
        op: &'static str,
        from: Vec<usize>,
        to: Vec<usize>,
    },

    #[error("{op}: axis {axis} of {shape:?} has size {size}, not 1")]
    SqueezeNotOne {
        op: &'static str,
        axis: usize,
        size: usize,
        shape: Vec<usize>,
    },

    #[error("{op}: view of {shape:?} with strides {strides:?} at offset {offset} reads past storage of {len} elements")]
    ViewOutOfBounds {
        op: &'static str,
        shape: Vec<usize>,
        strides: Vec<isize>,
        offset: usize,
        len: usize,
    },

    #[error("{op}: shape {shape:?} and strides {strides:?} have different ranks")]
    StrideRank {
        op: &'static str,
        shape: Vec<usize>,
        strides: Vec<isize>,
    },

    #[error("{op}: dtype {dtype} is not supported ({why})")]
    UnsupportedDType {
        op: &'static str,
        dtype: DType,
        why: &'static str,
    },

    #[error("{op}: dtypes differ: {lhs} vs {rhs}")]
    DTypeMismatch {
        op: &'static str,
        lhs: DType,
        rhs: DType,
    },

    #[error("{op}: the data holds {actual} but {requested} was requested")]
    ElementType {
        op: &'static str,
        requested: DType,
        actual: DType,
    },

    #[error("{op}: inner dimensions differ: {lhs:?} @ {rhs:?}")]
    MatmulShape {
        op: &'static str,
        lhs: Vec<usize>,
        rhs: Vec<usize>,
    },

    #[error("{op}: needs rank >= {min}, got shape {shape:?}")]
    RankTooLow {
        op: &'static str,
        min: usize,
        shape: Vec<usize>,
    },

    #[error("{op}: shapes {shapes:?} differ outside axis {axis}")]
    ConcatShape {
        op: &'static str,
        axis: usize,
        shapes: Vec<Vec<usize>>,
    },

    #[error("{op}: needs at least one input tensor")]
    NoInputs { op: &'static str },

    #[error("{op}: index {index} is out of range for axis {axis} of size {size}")]
    IndexOutOfRange {
        op: &'static str,
        index: i64,
        axis: usize,
        size: usize,
    },

    #[error("{op}: index tensor must be i32 or u8, got {dtype}")]
    IndexDType { op: &'static str, dtype: DType },

    #[error(
        "{op}: index shape {index:?} does not fit source shape {source_shape:?} on axis {axis}"
    )]
    GatherShape {
        op: &'static str,
        index: Vec<usize>,
        source_shape: Vec<usize>,
        axis: usize,
    },

    #[error("{op}: expected a tensor with one element, got shape {shape:?}")]
    NotScalar { op: &'static str, shape: Vec<usize> },

    #[error("{op}: {what} must be {expected}, got {got}")]
    InvalidArgument {
        op: &'static str,
        what: &'static str,
        expected: &'static str,
        got: String,
    },

    #[error("{op}: tensors live on different devices: {lhs} and {rhs}")]
    DeviceMismatch {
        op: &'static str,
        lhs: String,
        rhs: String,
    },

    #[error("{op}: device {device} is not available: {why}")]
    DeviceUnavailable {
        op: &'static str,
        device: String,
        why: String,
    },

    #[error("{op}: out of memory on {device}: {bytes} bytes requested ({why})")]
    OutOfMemory {
        op: &'static str,
        device: String,
        bytes: u64,
        why: String,
    },

    #[error("{op}: device {device} was lost: {why}")]
    DeviceLost {
        op: &'static str,
        device: String,
        why: String,
    },

    #[error("{op}: matrix {batch_index} of the batch (shape {shape:?}) is not symmetric positive definite")]
    NotPositiveDefinite {
        op: &'static str,
        shape: Vec<usize>,
        batch_index: usize,
    },

    #[error("{op}: the iteration did not converge for shape {shape:?}: {why}")]
    NoConvergence {
        op: &'static str,
        shape: Vec<usize>,
        why: String,
    },

    #[error("{op}: shape {shape:?} has more elements than fit in memory")]
    TooLarge { op: &'static str, shape: Vec<usize> },

    #[error("{op}: cannot decode {format} image: {why}")]
    ImageDecode {
        op: &'static str,
        format: String,
        why: String,
    },

    #[error("{op}: image of {width}x{height} is over the limit ({limit})")]
    ImageTooLarge {
        op: &'static str,
        width: u64,
        height: u64,
        limit: String,
    },

    #[error("{op}: cannot encode {format} image of shape {shape:?}: {why}")]
    ImageEncode {
        op: &'static str,
        format: String,
        shape: Vec<usize>,
        why: String,
    },

    #[error("{op}: backend failure: {message}")]
    Backend { op: &'static str, message: String },
}

/// `Result` with fusegraph-core's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
