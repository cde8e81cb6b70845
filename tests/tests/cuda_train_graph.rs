//! A training step recorded once as a CUDA graph and replayed: a small CNN
//! (convolution, batch norm, linear) trained with SGD + momentum and with
//! AdamW, once eagerly and once as a captured step built on
//! `Optimizer::step_in_place` and `Tensor::assign`. The replayed losses,
//! parameters and batch-norm statistics must follow the eager run step for
//! step, and the loss must fall. Without a GPU each test prints
//! `skipped: cuda not available`.
#![cfg(feature = "cuda")]

use fusegraph::cuda;
use fusegraph_core::nn::{BatchNorm2d, Conv2d, Conv2dOptions, DataLayout, Linear, Param};
use fusegraph_core::optim::{Adam, AdamOptions, Optimizer, Sgd};
use fusegraph_core::{autograd, DType, Device, Result, Tensor};
use fusegraph_tests::*;

/// Relative tolerance between replayed and eager f32 values. Both runs
/// launch the same kernels on the same data, so they differ only where a
/// split reduction's partial sums are added in another order (a few ulps
/// per step, compounding over the steps).
const TOL: f64 = 1e-4;
const STEPS: usize = 24;

struct Net {
    conv: Conv2d,
    bn: BatchNorm2d,
    fc: Linear,
}

impl Net {
    fn new(dev: &Device) -> Result<Net> {
        let opts = Conv2dOptions::default().padding(1).layout(DataLayout::Nhwc);
        Ok(Net {
            conv: Conv2d::new(3, 8, 3, opts, false, 11, dev)?,
            bn: BatchNorm2d::new(8, DataLayout::Nhwc, dev)?,
            fc: Linear::new(8, 4, true, 12, dev)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.bn.forward(&self.conv.forward(x)?, true)?.relu()?;
        self.fc.forward(&h.mean(&[1, 2], false)?)
    }

    fn parameters(&self) -> Vec<Param> {
        [
            self.conv.parameters(),
            self.bn.parameters(),
            self.fc.parameters(),
        ]
        .concat()
    }
}

/// One step; `in_place` keeps every piece of state in its buffer.
fn step(
    net: &Net,
    opt: &mut dyn Optimizer,
    x: &Tensor,
    y: &Tensor,
    in_place: bool,
) -> Result<Tensor> {
    let stats = net.bn.running_stats();
    let loss = net.forward(x)?.cross_entropy(y)?;
    let leaves = opt.leaves();
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = autograd::grad(&loss, &refs)?;
    let (mean, var) = net.bn.running_stats();
    let with = [loss.clone(), mean.clone(), var.clone()];
    if in_place {
        opt.step_in_place(&grads, &with)?;
        stats.0.assign(&mean)?;
        stats.1.assign(&var)?;
        net.bn.set_running_stats(stats)?;
    } else {
        opt.step(&grads, &with)?;
    }
    Ok(loss)
}

fn rel(a: &[f32], b: &[f32]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den.max(1e-30)).sqrt()
}

fn replay_matches_eager(make: impl Fn(Vec<Param>) -> Result<Box<dyn Optimizer>>) -> Result<()> {
    let Some(d) = available("cuda", cuda_device()) else {
        return Ok(());
    };
    // Two batches, alternated; the captured step reads `x`/`y`, which are
    // overwritten before each replay as a data loader would.
    let batches = (0..2)
        .map(|i| {
            let x = Tensor::randn([16, 8, 8, 3], 100 + i, DType::F32, &d)?;
            // The brightest channel of each image: a rule the network can
            // learn, so the loss has somewhere to go.
            let y = x.mean(&[1, 2], false)?.argmax(Some(-1), false)?;
            let y = Tensor::from_vec(y.cast(DType::I32)?.to_vec::<i32>()?, [16], &d)?;
            x.realize()?;
            Ok((x, y))
        })
        .collect::<Result<Vec<_>>>()?;

    let eager = Net::new(&d)?;
    let mut opt = make(eager.parameters())?;
    let mut want = Vec::new();
    for i in 0..STEPS {
        let (x, y) = &batches[i % 2];
        want.push(step(&eager, opt.as_mut(), x, y, false)?.item::<f32>()?);
    }

    let net = Net::new(&d)?;
    let mut opt = make(net.parameters())?;
    let (x0, y0) = &batches[0];
    let mut got = vec![step(&net, opt.as_mut(), x0, y0, false)?.item::<f32>()?];
    // The step's own input buffers, filled with batch 1 for step 2.
    let x = Tensor::from_vec(batches[1].0.to_vec::<f32>()?, x0.shape(), &d)?;
    let y = Tensor::from_vec(batches[1].1.to_vec::<i32>()?, y0.shape(), &d)?;
    let state_ids: Vec<u64> = opt.state().iter().map(|t| t.node().id).collect();
    // Recording runs the step once (step 2).
    let captured = cuda::capture(&d, || step(&net, opt.as_mut(), &x, &y, true))?;
    got.push(captured.value().item::<f32>()?);
    for i in 2..STEPS {
        x.assign(&batches[i % 2].0)?;
        y.assign(&batches[i % 2].1)?;
        captured.replay()?;
        got.push(captured.value().item::<f32>()?);
    }
    let ids: Vec<u64> = opt.state().iter().map(|t| t.node().id).collect();
    assert_eq!(ids, state_ids, "the captured step keeps its state tensors");
    eprintln!("eager losses    {want:?}\nreplayed losses {got:?}");
    let r = rel(&got, &want);
    assert!(r < TOL, "losses differ by {r:.2e}: {got:?} vs {want:?}");
    // Batches alternate, so compare a pair of steps with a pair (on the
    // CPU the same run ends near 0.7 of where it starts, both optimisers).
    let (start, end) = (got[0] + got[1], got[STEPS - 2] + got[STEPS - 1]);
    assert!(end < 0.8 * start, "training progresses: {got:?}");
    for (a, b) in net.parameters().iter().zip(eager.parameters()) {
        let r = rel(&a.value().to_vec::<f32>()?, &b.value().to_vec::<f32>()?);
        assert!(r < TOL, "parameter {:?} differs by {r:.2e}", a.shape());
    }
    let (m, v) = net.bn.running_stats();
    let (m2, v2) = eager.bn.running_stats();
    assert!(
        rel(&m.to_vec::<f32>()?, &m2.to_vec::<f32>()?) < TOL,
        "running mean"
    );
    assert!(
        rel(&v.to_vec::<f32>()?, &v2.to_vec::<f32>()?) < TOL,
        "running var"
    );
    Ok(())
}

#[test]
fn captured_sgd_step_replays_like_eager_steps() -> Result<()> {
    replay_matches_eager(|p| Ok(Box::new(Sgd::new(p, 0.1, 0.9, 5e-4))))
}

#[test]
fn captured_adamw_step_replays_like_eager_steps() -> Result<()> {
    replay_matches_eager(|p| Ok(Box::new(Adam::new(p, AdamOptions::adamw(0.01))?)))
}
