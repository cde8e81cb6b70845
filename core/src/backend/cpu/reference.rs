//! The reference path: evaluates a tensor's graph op by op, unfused, in f64,
//! with ndarray doing the view arithmetic. It shares no code with the
//! passes, the kernel IR or the fast path, so it is an independent oracle:
//! every backend's results are compared with it. Each op's result is rounded
//! to the op's dtype, which is what an eager library computes.

use std::collections::HashMap;
use std::sync::Arc;

use ndarray::{ArrayD, Axis, Dimension, IxDyn, Slice};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::node::{Node, State};
use crate::graph::op::{Op, ReduceOp, ViewOp};
use crate::rng;
use crate::tensor::Tensor;

/// The f64 values of `t`, computed without the fast path.
pub fn evaluate(t: &Tensor) -> Result<ArrayD<f64>> {
    let mut memo: HashMap<u64, ArrayD<f64>> = HashMap::new();
    // Iterative post-order, so deep graphs do not overflow the stack.
    let mut stack: Vec<(Arc<Node>, bool)> = vec![(t.node().clone(), false)];
    while let Some((node, ready)) = stack.pop() {
        if memo.contains_key(&node.id) {
            continue;
        }
        match node.state() {
            State::Ready(storage) => {
                // Device buffers are read back: the oracle always runs on the host.
                let vals = storage.to_cpu()?.gather_f64(&node.layout.indices());
                memo.insert(node.id, to_array(node.shape(), vals)?);
            }
            State::Lazy { op, inputs } => {
                if !ready {
                    stack.push((node.clone(), true));
                    for i in inputs.iter().rev() {
                        if !memo.contains_key(&i.id) {
                            stack.push((i.clone(), false));
                        }
                    }
                    continue;
                }
                let args: Vec<&ArrayD<f64>> = inputs.iter().map(|i| &memo[&i.id]).collect();
                let v = eval_op(&node, &op, &inputs, &args)?;
                let v = v.mapv(|x| node.dtype.round_f64(x));
                memo.insert(node.id, v);
            }
        }
    }
    memo.remove(&t.node().id).ok_or(Error::Backend {
        op: "reference",
        message: "no value computed".into(),
    })
}

fn to_array(shape: &[usize], vals: Vec<f64>) -> Result<ArrayD<f64>> {
    ArrayD::from_shape_vec(IxDyn(shape), vals).map_err(|e| Error::Backend {
        op: "reference",
        message: e.to_string(),
    })
}

fn eval_op(
    node: &Node,
    op: &Op,
    inputs: &[Arc<Node>],
    args: &[&ArrayD<f64>],
) -> Result<ArrayD<f64>> {
    let shape = node.shape().to_vec();
    let numel: usize = shape.iter().product();
    Ok(match op {
        Op::Full(s) => ArrayD::from_elem(IxDyn(&shape), s.value),
        Op::Arange { start, step } => to_array(
            &shape,
            (0..numel)
                .map(|i| start.value + step.value * i as f64)
                .collect(),
        )?,
        Op::Rand { seed, normal } => {
            let key = rng::seed_key(*seed);
            let f = |i: usize| if *normal { rng::normal(key, i as u32) } else { rng::uniform(key, i as u32) } as f64;
            to_array(&shape, (0..numel).map(f).collect())?
        }
        Op::View(v) => view(node, v, inputs, args[0])?,
        Op::Contiguous => args[0].clone(),
        Op::Conv2d { pass, geometry } => {
            let dims = |s: &[usize]| [s[0], s[1], s[2], s[3]];
            let (x, w, y) = crate::nn::conv_native::operand_shapes(
                *pass,
                dims(inputs[0].shape()),
                dims(inputs[1].shape()),
                dims(&shape),
            );
            let a: Vec<f64> = args[0].iter().copied().collect();
            let b: Vec<f64> = args[1].iter().copied().collect();
            let out = crate::nn::conv_native::direct_f64(*pass, *geometry, x, w, y, &a, &b);
            to_array(&shape, out)?
        }
        Op::Unary(u) => {
            let d = inputs[0].dtype;
            args[0].mapv(|x| {
                let y = u.eval_f64(x);
                if d.is_int() {
                    crate::graph::op::wrap_int(y as i64, d)
                } else {
                    y
                }
            })
        }
        Op::Binary(b) => {
            let d = inputs[0].dtype;
            let mut out = args[0].clone();
            out.zip_mut_with(args[1], |x, &y| {
                *x = if d.is_int() || d == DType::Bool {
                    b.eval_int(*x, y, d)
                } else {
                    b.eval_f64(*x, y)
                }
            });
            out
        }
        Op::Where => {
            let mut out = args[1].clone();
            ndarray::Zip::from(&mut out)
                .and(args[0])
                .and(args[2])
                .for_each(|o, &c, &b| {
                    if c == 0.0 {
                        *o = b
                    }
                });
            out
        }
        Op::Cast(_) => args[0].clone(),
        Op::Reduce { op, axes } => reduce(*op, axes, args[0]),
        Op::Matmul => matmul(args[0], args[1], &shape)?,
        Op::Concat { axis } => {
            let views: Vec<_> = args.iter().map(|a| a.view()).collect();
            ndarray::concatenate(Axis(*axis), &views).map_err(|e| Error::Backend {
                op: "reference",
                message: e.to_string(),
            })?
        }
        Op::IndexSelect { axis } => {
            let size = args[0].shape()[*axis];
            let mut picks = Vec::new();
            for &raw in args[1].iter() {
                picks.push(check_index("index_select", raw, *axis, size)?);
            }
            args[0].select(Axis(*axis), &picks)
        }
        Op::Gather { axis } => {
            let size = args[0].shape()[*axis];
            let mut out = ArrayD::zeros(IxDyn(&shape));
            for (coords, &raw) in args[1].indexed_iter() {
                let mut src = coords.slice().to_vec();
                src[*axis] = check_index("gather", raw, *axis, size)?;
                out[coords.slice()] = args[0][src.as_slice()];
            }
            out
        }
    })
}

fn check_index(op: &'static str, raw: f64, axis: usize, size: usize) -> Result<usize> {
    let i = raw as i64;
    let j = if i < 0 { i + size as i64 } else { i };
    if j < 0 || j >= size as i64 {
        return Err(Error::IndexOutOfRange {
            op,
            index: i,
            axis,
            size,
        });
    }
    Ok(j as usize)
}

fn view(node: &Node, v: &ViewOp, inputs: &[Arc<Node>], x: &ArrayD<f64>) -> Result<ArrayD<f64>> {
    let err = |m: String| Error::Backend {
        op: "reference",
        message: m,
    };
    Ok(match v {
        ViewOp::Reshape(shape) => {
            let flat: Vec<f64> = x.iter().copied().collect();
            to_array(shape, flat)?
        }
        ViewOp::Permute(axes) => x.clone().permuted_axes(IxDyn(axes)),
        ViewOp::Detach => x.clone(),
        ViewOp::Narrow { axis, start, len } => x
            .slice_axis(Axis(*axis), Slice::from(*start..start + len))
            .to_owned(),
        ViewOp::Expand(shape) => x
            .broadcast(IxDyn(shape))
            .ok_or_else(|| err(format!("cannot broadcast {:?} to {shape:?}", x.shape())))?
            .to_owned(),
        ViewOp::AsStrided(l) | ViewOp::Composed(l) => {
            // Relative to the storage of the root: rebuild that storage's
            // values (row-major for a computed root), then index it.
            let storage = root_storage_values(&inputs[0])?;
            let vals: Vec<f64> = l
                .indices()
                .into_iter()
                .map(|i| storage.get(i).copied().unwrap_or(f64::NAN))
                .collect();
            to_array(&node.layout.shape, vals)?
        }
    })
}

/// Values of the storage a node's layout indexes, in storage order.
fn root_storage_values(n: &Arc<Node>) -> Result<Vec<f64>> {
    if let State::Ready(s) = n.state() {
        let s = s.to_cpu()?;
        return Ok((0..s.len()).map(|i| s.get_f64(i)).collect());
    }
    match n.state() {
        State::Lazy {
            op: Op::View(_),
            inputs,
        } => root_storage_values(&inputs[0]),
        _ => {
            let t = Tensor {
                node: n.clone(),
                device: crate::device::Device::Cpu,
            };
            Ok(evaluate(&t)?.iter().copied().collect())
        }
    }
}

fn reduce(op: ReduceOp, axes: &[usize], x: &ArrayD<f64>) -> ArrayD<f64> {
    // Move reduced axes last, flatten them into rows.
    let rank = x.ndim();
    let kept: Vec<usize> = (0..rank).filter(|a| !axes.contains(a)).collect();
    let order: Vec<usize> = kept.iter().chain(axes).copied().collect();
    let p = x.view().permuted_axes(IxDyn(&order));
    let rows: usize = kept.iter().map(|&a| x.shape()[a]).product();
    let row_len: usize = axes.iter().map(|&a| x.shape()[a]).product();
    let flat: Vec<f64> = p.iter().copied().collect();
    let mut out = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = &flat[r * row_len..(r + 1) * row_len];
        out.push(match op {
            ReduceOp::Sum => row.iter().sum(),
            ReduceOp::Max => row
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, crate::graph::op::nan_max),
            ReduceOp::Min => row
                .iter()
                .copied()
                .fold(f64::INFINITY, crate::graph::op::nan_min),
            ReduceOp::ArgMax => {
                let mut best = 0usize;
                for (i, &v) in row.iter().enumerate() {
                    if v.is_nan() {
                        best = i;
                        break;
                    }
                    if v > row[best] {
                        best = i;
                    }
                }
                best as f64
            }
        });
    }
    let keep_shape: Vec<usize> = (0..rank)
        .map(|a| if axes.contains(&a) { 1 } else { x.shape()[a] })
        .collect();
    ArrayD::from_shape_vec(IxDyn(&keep_shape), out)
        .unwrap_or_else(|_| ArrayD::zeros(IxDyn(&keep_shape)))
}

fn matmul(a: &ArrayD<f64>, b: &ArrayD<f64>, shape: &[usize]) -> Result<ArrayD<f64>> {
    let r = a.ndim();
    let (m, k, n) = (a.shape()[r - 2], a.shape()[r - 1], b.shape()[r - 1]);
    let batch: usize = a.shape()[..r - 2].iter().product();
    let av: Vec<f64> = a.iter().copied().collect();
    let bv: Vec<f64> = b.iter().copied().collect();
    let mut out = vec![0.0; batch * m * n];
    for bi in 0..batch {
        for i in 0..m {
            for kk in 0..k {
                let x = av[bi * m * k + i * k + kk];
                for j in 0..n {
                    out[bi * m * n + i * n + j] += x * bv[bi * k * n + kk * n + j];
                }
            }
        }
    }
    to_array(shape, out)
}
