use fusegraph_core::backend::cpu::reference::evaluate;
use fusegraph_core::runtime::compiled_for;
use fusegraph_core::{DType, Device, Limits, Tensor};

fn main() -> fusegraph_core::Result<()> {
    let d = Device::Cpu;
    let a = Tensor::randn([4, 5], 1, DType::F32, &d)?;
    let b = Tensor::randn([5], 2, DType::F32, &d)?;
    let c = Tensor::randn([5, 4], 3, DType::F32, &d)?.t()?;
    let y = a.mul(&b)?.add(&c)?.relu()?;
    let k = compiled_for(&[y.clone()], &Limits::cpu())?;
    println!("fused kernels: {}", k.schedule.steps.len());
    println!("{:?}", y.to_vec::<f32>()?);
    println!("{:?}", evaluate(&y)?.iter().collect::<Vec<_>>());
    let s = a.softmax(-1)?;
    println!("softmax kernels: {}", compiled_for(&[s.clone()], &Limits::cpu())?.schedule.steps.len());
    println!("{:?}", s.to_vec::<f32>()?);
    println!("{:?}", evaluate(&s)?.iter().collect::<Vec<_>>());
    let ln = a.layer_norm(1, Some(&b), Some(&b), 1e-5)?;
    println!("ln kernels: {}", compiled_for(&[ln.clone()], &Limits::cpu())?.schedule.steps.len());
    println!("{:?}", ln.to_vec::<f32>()?);
    println!("{:?}", evaluate(&ln)?.iter().collect::<Vec<_>>());
    let w = Tensor::randn([5, 3], 4, DType::F32, &d)?;
    let bias = Tensor::randn([3], 5, DType::F32, &d)?;
    let mm = a.matmul(&w)?.add(&bias)?.relu()?;
    println!("mm kernels: {}", compiled_for(&[mm.clone()], &Limits::cpu())?.schedule.steps.len());
    println!("{:?}", mm.to_vec::<f32>()?);
    println!("{:?}", evaluate(&mm)?.iter().collect::<Vec<_>>());
    let v = a.var(&[0], 1, false)?;
    println!("var kernels: {}", compiled_for(&[v.clone()], &Limits::cpu())?.schedule.steps.len());
    println!("{:?}", v.to_vec::<f32>()?);
    println!("{:?}", evaluate(&v)?.iter().collect::<Vec<_>>());
    Ok(())
}
