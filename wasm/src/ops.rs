//! Compute ops: elementwise (by name, so one export serves every op),
//! matmul, reductions, softmax and friends, casts, indexing.

use crate::dtype;
use crate::error::{invalid, JsResult, OrThrow};
use crate::tensor::{wrap, WasmTensor};
use fusegraph_core::graph::{BinaryOp, UnaryOp};
use fusegraph_core::{Result, Tensor};
use wasm_bindgen::prelude::*;

fn unary_op(name: &str) -> Result<UnaryOp> {
    use UnaryOp::*;
    Ok(match name {
        "neg" => Neg,
        "abs" => Abs,
        "exp" => Exp,
        "log" => Log,
        "sqrt" => Sqrt,
        "rsqrt" => Rsqrt,
        "sin" => Sin,
        "cos" => Cos,
        "tanh" => Tanh,
        "sigmoid" => Sigmoid,
        "relu" => Relu,
        "gelu" => GeluErf,
        "gelu_tanh" => GeluTanh,
        "silu" => Silu,
        "logical_not" => Not,
        other => return Err(invalid("unary", "op", "a unary op name", other)),
    })
}

fn binary_op(name: &str) -> Result<BinaryOp> {
    use BinaryOp::*;
    Ok(match name {
        "add" => Add,
        "sub" => Sub,
        "mul" => Mul,
        "div" => Div,
        "pow" => Pow,
        "maximum" => Maximum,
        "minimum" => Minimum,
        "eq" => Eq,
        "ne" => Ne,
        "lt" => Lt,
        "le" => Le,
        "gt" => Gt,
        "ge" => Ge,
        "logical_and" => And,
        "logical_or" => Or,
        other => return Err(invalid("binary", "op", "a binary op name", other)),
    })
}

fn axes(v: &[i32]) -> Vec<isize> {
    v.iter().map(|&a| a as isize).collect()
}

#[wasm_bindgen]
impl WasmTensor {
    /// A unary elementwise op by name (`relu`, `exp`, `gelu`, ...).
    pub fn unary(&self, op: &str) -> JsResult<WasmTensor> {
        let op = unary_op(op).or_throw()?;
        wrap(self.inner.unary(op))
    }

    /// A binary elementwise op by name with NumPy broadcasting.
    pub fn binary(&self, op: &str, rhs: &WasmTensor) -> JsResult<WasmTensor> {
        let op = binary_op(op).or_throw()?;
        wrap(self.inner.binary(op, &rhs.inner))
    }

    /// A binary op with a number, which takes this tensor's dtype.
    #[wasm_bindgen(js_name = binaryScalar)]
    pub fn binary_scalar(&self, op: &str, rhs: f64) -> JsResult<WasmTensor> {
        let op = binary_op(op).or_throw()?;
        let s = Tensor::scalar(rhs, self.inner.dtype(), self.inner.device()).or_throw()?;
        wrap(self.inner.binary(op, &s))
    }

    pub fn matmul(&self, rhs: &WasmTensor) -> JsResult<WasmTensor> {
        wrap(self.inner.matmul(&rhs.inner))
    }

    /// `sum`, `mean`, `max` or `min` over `axes` (empty: all axes).
    pub fn reduce(&self, op: &str, axes_: Vec<i32>, keepdim: bool) -> JsResult<WasmTensor> {
        let a = axes(&axes_);
        wrap(match op {
            "sum" => self.inner.sum(&a, keepdim),
            "mean" => self.inner.mean(&a, keepdim),
            "max" => self.inner.max(&a, keepdim),
            "min" => self.inner.min(&a, keepdim),
            other => Err(invalid("reduce", "op", "sum, mean, max or min", other)),
        })
    }

    pub fn var(&self, axes_: Vec<i32>, correction: usize, keepdim: bool) -> JsResult<WasmTensor> {
        wrap(self.inner.var(&axes(&axes_), correction, keepdim))
    }

    /// Index of the largest element along `axis` (all elements when `hasAxis` is false).
    pub fn argmax(&self, has_axis: bool, axis: i32, keepdim: bool) -> JsResult<WasmTensor> {
        let axis = has_axis.then_some(axis as isize);
        wrap(self.inner.argmax(axis, keepdim))
    }

    pub fn softmax(&self, axis: i32) -> JsResult<WasmTensor> {
        wrap(self.inner.softmax(axis as isize))
    }

    #[wasm_bindgen(js_name = logSoftmax)]
    pub fn log_softmax(&self, axis: i32) -> JsResult<WasmTensor> {
        wrap(self.inner.log_softmax(axis as isize))
    }

    /// Layer norm over the last `normalizedDims` axes, with optional weight and bias.
    #[wasm_bindgen(js_name = layerNorm)]
    pub fn layer_norm(
        &self,
        normalized_dims: usize,
        weight: Option<WasmTensor>,
        bias: Option<WasmTensor>,
        eps: f64,
    ) -> JsResult<WasmTensor> {
        let w = weight.as_ref().map(|t| &t.inner);
        let b = bias.as_ref().map(|t| &t.inner);
        wrap(self.inner.layer_norm(normalized_dims, w, b, eps))
    }

    pub fn cast(&self, dtype: &str) -> JsResult<WasmTensor> {
        let dt = dtype::parse("cast", dtype).or_throw()?;
        wrap(self.inner.cast(dt))
    }

    pub fn clamp(&self, lo: f64, hi: f64) -> JsResult<WasmTensor> {
        wrap(self.inner.clamp(lo, hi))
    }

    /// `cond ? a : b` elementwise, with broadcasting.
    #[wasm_bindgen(js_name = whereCond)]
    pub fn where_cond(cond: &WasmTensor, a: &WasmTensor, b: &WasmTensor) -> JsResult<WasmTensor> {
        wrap(Tensor::where_cond(&cond.inner, &a.inner, &b.inner))
    }

    /// Joins tensors along `axis` (handles are consumed: pass `cloneHandle()`s).
    pub fn concat(tensors: Vec<WasmTensor>, axis: i32) -> JsResult<WasmTensor> {
        let refs: Vec<&Tensor> = tensors.iter().map(|t| &t.inner).collect();
        wrap(Tensor::concat(&refs, axis as isize))
    }

    #[wasm_bindgen(js_name = indexSelect)]
    pub fn index_select(&self, axis: i32, index: &WasmTensor) -> JsResult<WasmTensor> {
        wrap(self.inner.index_select(axis as isize, &index.inner))
    }

    pub fn gather(&self, axis: i32, index: &WasmTensor) -> JsResult<WasmTensor> {
        wrap(self.inner.gather(axis as isize, &index.inner))
    }
}
