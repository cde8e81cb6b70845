//! The kernels the passes actually produce, not hand-built ones: real
//! graphs are fused and scheduled, every kernel is rendered to WGSL and
//! validated by naga, and the fusion limit for WebGPU (7 inputs + 1 output
//! per stage) is respected by a 12-input expression.

use fusegraph_core::codegen::{render, RenderOptions};
use fusegraph_core::runtime::compiled_for;
use fusegraph_core::{DType, Device, Limits, Result, Tensor};
use naga::valid::{Capabilities, ValidationFlags, Validator};

fn leaf(shape: &[usize], seed: u64, dtype: DType) -> Result<Tensor> {
    let t = Tensor::randn(shape.to_vec(), seed, DType::F32, &Device::Cpu)?.cast(dtype)?;
    t.realize()?;
    Ok(t)
}

/// Compiles `t` for `limits`, renders every kernel and validates it.
/// Returns the number of kernels.
fn validate_all(t: &Tensor, limits: &Limits) -> Result<usize> {
    let compiled = compiled_for(std::slice::from_ref(t), limits)?;
    let opts = RenderOptions::wgsl();
    for step in &compiled.schedule.steps {
        let r = render(&step.kernel, &opts)?;
        let module = naga::front::wgsl::parse_str(&r.source)
            .unwrap_or_else(|e| panic!("{}\n{}", e.emit_to_string(&r.source), r.source));
        Validator::new(ValidationFlags::all(), Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}\n{}", e.emit_to_string(&r.source), r.source));
        assert!(
            r.bindings.len() <= opts.max_storage_buffers as usize,
            "{} bindings",
            r.bindings.len()
        );
    }
    Ok(compiled.schedule.steps.len())
}

#[test]
fn fused_chain_with_broadcast_and_transposed_input_renders_valid_wgsl() -> Result<()> {
    let a = leaf(&[64, 32], 1, DType::F32)?;
    let b = leaf(&[32], 2, DType::F32)?;
    let c = leaf(&[32, 64], 3, DType::F32)?.t()?;
    let y = a.mul(&b)?.add(&c)?.relu()?.sigmoid()?;
    assert_eq!(validate_all(&y, &Limits::webgpu())?, 1);
    Ok(())
}

#[test]
fn softmax_layer_norm_and_var_render_valid_row_kernels() -> Result<()> {
    let x = leaf(&[16, 48], 4, DType::F32)?;
    let w = leaf(&[48], 5, DType::F32)?;
    assert_eq!(validate_all(&x.softmax(-1)?, &Limits::webgpu())?, 1);
    assert_eq!(validate_all(&x.softmax(0)?, &Limits::webgpu())?, 1);
    assert_eq!(validate_all(&x.log_softmax(-1)?, &Limits::webgpu())?, 1);
    assert_eq!(
        validate_all(
            &x.layer_norm(1, Some(&w), Some(&w), 1e-5)?,
            &Limits::webgpu()
        )?,
        1
    );
    assert_eq!(validate_all(&x.var(&[0], 1, false)?, &Limits::webgpu())?, 1);
    assert_eq!(
        validate_all(&x.argmax(Some(-1), false)?, &Limits::webgpu())?,
        1
    );
    Ok(())
}

#[test]
fn matmul_with_bias_relu_epilogue_renders_valid_wgsl() -> Result<()> {
    let a = leaf(&[4, 33, 17], 6, DType::F32)?;
    let b = leaf(&[17, 29], 7, DType::F32)?;
    let bias = leaf(&[29], 8, DType::F32)?;
    let y = a.matmul(&b)?.add(&bias)?.relu()?;
    assert_eq!(validate_all(&y, &Limits::webgpu())?, 1);
    let yt = a.matmul(&leaf(&[29, 17], 9, DType::F32)?.t()?)?;
    assert_eq!(validate_all(&yt, &Limits::webgpu())?, 1);
    Ok(())
}

#[test]
fn bf16_and_u8_graphs_render_valid_wgsl() -> Result<()> {
    let a = leaf(&[8, 9], 10, DType::BF16)?;
    let y = a.mul_scalar(3.0)?.exp()?.softmax(-1)?;
    assert!(validate_all(&y, &Limits::webgpu())? >= 1);
    let img = Tensor::from_vec((0..64u8).collect(), [8, 8], &Device::Cpu)?;
    let z = img
        .cast(DType::F32)?
        .mul_scalar(1.5)?
        .clamp(0.0, 255.0)?
        .cast(DType::U8)?;
    assert_eq!(validate_all(&z, &Limits::webgpu())?, 1);
    Ok(())
}

#[test]
fn generators_concat_and_gather_render_valid_wgsl() -> Result<()> {
    let r = Tensor::rand([32, 8], 11, DType::F32, &Device::Cpu)?.mul_scalar(2.0)?;
    assert_eq!(validate_all(&r, &Limits::webgpu())?, 1);
    let a = leaf(&[3, 4], 12, DType::F32)?;
    let b = leaf(&[2, 4], 13, DType::F32)?;
    assert_eq!(
        validate_all(&Tensor::concat(&[&a, &b, &a], 0)?, &Limits::webgpu())?,
        1
    );
    let idx = Tensor::from_vec(vec![2i32, 0, 1, 1], [4], &Device::Cpu)?;
    assert_eq!(
        validate_all(&a.index_select(1, &idx)?, &Limits::webgpu())?,
        1
    );
    Ok(())
}

#[test]
fn twelve_input_expression_splits_under_the_webgpu_binding_limit_and_stays_correct() -> Result<()> {
    let inputs: Vec<Tensor> = (0..12)
        .map(|i| leaf(&[256], 100 + i, DType::F32))
        .collect::<Result<_>>()?;
    let mut y = inputs[0].clone();
    for (i, t) in inputs.iter().enumerate().skip(1) {
        y = if i % 2 == 0 {
            y.add(t)?
        } else {
            y.mul(t)?.tanh()?
        };
    }
    // On the CPU the whole expression is one kernel; for WebGPU it must be
    // split so no kernel binds more than 8 storage buffers.
    assert_eq!(
        compiled_for(std::slice::from_ref(&y), &Limits::cpu())?
            .schedule
            .steps
            .len(),
        1
    );
    let kernels = validate_all(&y, &Limits::webgpu())?;
    assert!(kernels >= 2, "{kernels} kernels");
    // The split schedule computes the same numbers (run on the CPU backend).
    fusegraph_core::runtime::realize_with(std::slice::from_ref(&y), &Limits::webgpu())?;
    let fused = y.to_vec::<f32>()?;
    let want = fusegraph_core::backend::cpu::reference::evaluate(&y)?;
    for (g, w) in fused.iter().zip(want.iter()) {
        assert!(
            (*g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{g} vs {w}"
        );
    }
    Ok(())
}
