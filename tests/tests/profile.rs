//! The kernel profiler records one launch per scheduled kernel, with the
//! kernel's own FLOP and byte counts.

use fusegraph_core::codegen::kernel_hash;
use fusegraph_core::profile::{self, Scope};
use fusegraph_core::runtime::compiled_for;
use fusegraph_core::{Device, Limits, Tensor};

fn input(shape: &[usize], seed: u32) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    Tensor::from_vec(v, shape.to_vec(), &Device::Cpu).unwrap()
}

#[test]
fn profiles_softmax_and_matmul_bias_relu_one_record_per_kernel() {
    let x = input(&[33, 70], 1);
    let (p, q, bias) = (input(&[20, 48], 2), input(&[48, 24], 3), input(&[24], 4));
    let softmax = x.softmax(-1).unwrap();
    let mlp = p.matmul(&q).unwrap().add(&bias).unwrap().relu().unwrap();
    let mut expected = Vec::new();
    for t in [&softmax, &mlp] {
        let c = compiled_for(std::slice::from_ref(t), &Limits::cpu()).unwrap();
        expected.extend(c.schedule.steps.iter().map(|s| s.kernel.clone()));
    }
    assert!(expected.iter().any(|k| k.kind() == "matmul"));

    let scope = Scope::start();
    softmax.realize().unwrap();
    mlp.realize().unwrap();
    let report = scope.finish();

    let me = profile::thread_id();
    let got: Vec<_> = report.records.iter().filter(|r| r.thread == me).collect();
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for (r, k) in got.iter().zip(&expected) {
        assert_eq!(r.name, format!("fg_{}_{:016x}", k.kind(), kernel_hash(k)));
        assert_eq!(r.kind, k.kind());
        assert_eq!(r.flops, k.flops());
        assert_eq!(r.bytes, k.bytes());
        assert!(r.dur_ns > 0);
    }
    for w in got.windows(2) {
        assert!(w[0].start_ns + w[0].dur_ns <= w[1].start_ns);
    }
    let rows = report.summary();
    assert!(rows.windows(2).all(|w| w[0].total_ns >= w[1].total_ns));
    assert!(report
        .chrome_trace_json()
        .starts_with("{\"traceEvents\":[{"));
}
