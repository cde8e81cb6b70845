use std::time::Instant;
use fusegraph_core::graph::build::build_graph;
use fusegraph_core::runtime::{compile, realize};
use fusegraph_core::{DType, Device, Limits, Tensor};

fn chain(s: &Tensor) -> Tensor {
    let mut y = s.clone();
    for i in 0..10 { y = if i % 2 == 0 { y.mul_scalar(1.01).unwrap() } else { y.add(s).unwrap() }; }
    y
}

fn med(mut v: Vec<f64>) -> f64 { v.sort_by(|a, b| a.partial_cmp(b).unwrap()); v[v.len() / 2] * 1e6 }

fn main() {
    let d = Device::Cpu;
    let s = Tensor::randn([8], 9, DType::F32, &d).unwrap(); s.realize().unwrap();
    let (mut tb, mut tbuild, mut tcomp, mut treal) = (vec![], vec![], vec![], vec![]);
    for _ in 0..2000 {
        let t = Instant::now(); let y = chain(&s); tb.push(t.elapsed().as_secs_f64());
        let t = Instant::now(); let b = build_graph(&[y.node().clone()]); tbuild.push(t.elapsed().as_secs_f64());
        let t = Instant::now(); let c = compile(b.graph, &Limits::cpu()).unwrap(); tcomp.push(t.elapsed().as_secs_f64());
        std::hint::black_box(c);
        let t = Instant::now(); realize(&[y.clone()]).unwrap(); treal.push(t.elapsed().as_secs_f64());
    }
    let y = chain(&s);
    let mut tl = vec![]; let mut te = vec![];
    for _ in 0..2000 {
        let t = Instant::now(); let c = fusegraph_core::runtime::compiled_for(&[y.clone()], &Limits::cpu()).unwrap(); tl.push(t.elapsed().as_secs_f64());
        let b = build_graph(&[y.node().clone()]);
        let t = Instant::now(); let r = fusegraph_core::backend::cpu::exec::execute(&c.schedule, &b.leaf_storage).unwrap(); te.push(t.elapsed().as_secs_f64());
        std::hint::black_box(r);
    }
    println!("build+lookup {:.2} us, execute {:.2} us", med(tl), med(te));
    println!("tensor ops (10) {:.2} us, build_graph {:.2} us, passes+schedule {:.2} us, cached realize {:.2} us", med(tb), med(tbuild), med(tcomp), med(treal));
}

#[allow(dead_code)]
fn breakdown() {}
