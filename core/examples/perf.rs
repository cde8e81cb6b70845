use std::time::Instant;
use fusegraph_core::{DType, Device, Tensor};

fn time<F: FnMut()>(name: &str, reps: usize, mut f: F) {
    for _ in 0..3 { f(); }
    let mut v = Vec::new();
    for _ in 0..reps { let t = Instant::now(); f(); v.push(t.elapsed().as_secs_f64()); }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("{name:40} {:10.3} ms", v[v.len() / 2] * 1e3);
}

fn main() -> fusegraph_core::Result<()> {
    let d = Device::Cpu;
    let n = 16 << 20;
    let a = Tensor::randn([n], 1, DType::F32, &d)?; a.realize()?;
    let b = Tensor::randn([n], 2, DType::F32, &d)?; b.realize()?;
    let c = Tensor::randn([n], 3, DType::F32, &d)?; c.realize()?;
    time("fused a*b+c relu 16M", 10, || { a.mul(&b).unwrap().add(&c).unwrap().relu().unwrap().realize().unwrap(); });
    let x = Tensor::randn([1024, 1024], 4, DType::F32, &d)?; x.realize()?;
    let r = Tensor::randn([1024], 5, DType::F32, &d)?; r.realize()?;
    time("bcast (1024,1024)+(1024,)", 20, || { x.add(&r).unwrap().realize().unwrap(); });
    let x3 = Tensor::randn([1024, 1024, 3], 4, DType::F32, &d)?; x3.realize()?;
    let r3 = Tensor::randn([3], 5, DType::F32, &d)?; r3.realize()?;
    time("bcast (1024,1024,3)+(3,)", 20, || { x3.add(&r3).unwrap().realize().unwrap(); });
    let x64 = Tensor::randn([64, 1024, 1024], 4, DType::F32, &d)?; x64.realize()?;
    let r64 = Tensor::randn([64, 1, 1], 5, DType::F32, &d)?; r64.realize()?;
    time("bcast (64,1024,1024)+(64,1,1)", 5, || { x64.add(&r64).unwrap().realize().unwrap(); });
    time("sum 1024x1024", 20, || { x.sum(&[], false).unwrap().realize().unwrap(); });
    time("max 1024x1024", 20, || { x.max(&[], false).unwrap().realize().unwrap(); });
    time("mean 1024x1024", 20, || { x.mean(&[], false).unwrap().realize().unwrap(); });
    time("softmax 1024x1024", 20, || { x.softmax(-1).unwrap().realize().unwrap(); });
    for s in [512usize, 1024, 2048] {
        let p = Tensor::randn([s, s], 6, DType::F32, &d)?; p.realize()?;
        let q = Tensor::randn([s, s], 7, DType::F32, &d)?; q.realize()?;
        time(&format!("matmul {s}"), if s > 1024 { 5 } else { 20 }, || { p.matmul(&q).unwrap().realize().unwrap(); });
        time(&format!("matmul {s} b.t()"), if s > 1024 { 5 } else { 20 }, || { p.matmul(&q.t().unwrap()).unwrap().realize().unwrap(); });
    }
    let s = Tensor::randn([8], 9, DType::F32, &d)?; s.realize()?;
    time("10-op chain tiny (cached)", 1000, || {
        let mut y = s.clone();
        for i in 0..10 { y = if i % 2 == 0 { y.mul_scalar(1.01).unwrap() } else { y.add(&s).unwrap() }; }
        y.realize().unwrap();
    });
    Ok(())
}
