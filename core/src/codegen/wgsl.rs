//! The WGSL dialect: `let` declarations, `select`, storage-buffer bindings
//! in group 0, bf16/u8/bool packed into `u32` words, f16 behind `enable f16;`.
//! WGSL leaves NaN handling to the implementation, so NaN tests go through
//! the bits, never through `x != x`.

use super::render::{Lang, MAP_UNROLL, MAP_WG, MAX_GROUPS};
use super::{Dialect, RenderOptions};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::op::ReduceOp;
use crate::schedule::{Body, Expr, ExprNode, Kernel};

pub(crate) struct Wgsl {
    args: Vec<DType>,
    out: DType,
    /// Some dtype of the kernel is f16, so the module needs `enable f16;`.
    f16: bool,
    /// Row reductions fold across subgroups (see `RenderOptions::subgroups`).
    subgroups: bool,
    /// The output is written at scattered positions into packed words
    /// (row reductions, matmuls), so it is bound as atomics.
    scattered: bool,
}

/// Every dtype a kernel mentions.
fn dtypes(k: &Kernel) -> Vec<DType> {
    let mut ds: Vec<DType> = k.args.iter().map(|a| a.dtype).collect();
    ds.push(k.out_dtype);
    let mut expr = |e: &Expr| {
        ds.extend(e.dtypes.iter().copied());
        for n in &e.nodes {
            match n {
                ExprNode::Cast(d, _) => ds.push(*d),
                ExprNode::Const(s) => ds.push(s.dtype),
                _ => {}
            }
        }
    };
    match &k.body {
        Body::Map(m) => expr(&m.expr),
        Body::Reduce(r) => expr(&r.expr),
        Body::Matmul(mm) => {
            expr(&mm.epilogue);
            ds.push(mm.acc_dtype);
        }
        Body::Concat(_) | Body::Index(_) | Body::Conv(_) => {}
    }
    ds
}

/// Refuses what WGSL (with these options) cannot express.
pub(crate) fn check(k: &Kernel, opts: &RenderOptions) -> Result<()> {
    let ds = dtypes(k);
    if ds.contains(&DType::F64) {
        return Err(Error::UnsupportedDType {
            op: "render_wgsl",
            dtype: DType::F64,
            why: "WGSL has no 64-bit floats; cast to f32 or run on CPU/CUDA",
        });
    }
    if ds.contains(&DType::F16) && !opts.shader_f16 {
        return Err(Error::UnsupportedDType {
            op: "render_wgsl",
            dtype: DType::F16,
            why: "the adapter lacks the shader-f16 feature",
        });
    }
    let buffers = k.args.len() + 1;
    if buffers > opts.max_storage_buffers as usize {
        return Err(Error::InvalidArgument {
            op: "render_wgsl",
            what: "storage buffers",
            expected: "at most max_storage_buffers (the fuser must split or pack the kernel)",
            got: format!("{buffers} > {}", opts.max_storage_buffers),
        });
    }
    let biggest = k
        .args
        .iter()
        .map(|a| a.len)
        .chain([k.out_numel()])
        .max()
        .unwrap_or(0);
    if biggest > i32::MAX as usize {
        return Err(Error::InvalidArgument {
            op: "render_wgsl",
            what: "buffer length",
            expected: "below 2^31 elements (WGSL indexes with i32)",
            got: biggest.to_string(),
        });
    }
    Ok(())
}

impl Wgsl {
    /// `groups` workgroups as a dispatch: one row of at most `MAX_GROUPS`,
    /// then as many rows as needed.
    fn groups_2d(groups: u64) -> [u32; 3] {
        if groups <= MAX_GROUPS {
            [groups as u32, 1, 1]
        } else {
            [MAX_GROUPS as u32, groups.div_ceil(MAX_GROUPS) as u32, 1]
        }
    }

    /// Packed outputs (bf16, u8, bool: several elements per `u32` word):
    /// one invocation owns a whole word, so they need no atomics.
    fn packed_elementwise_entry(&self, name: &str, numel: usize) -> (String, [u32; 3], [u32; 3]) {
        let (per, width) = Self::per_word(self.out);
        let threads = (numel as u64).div_ceil(per as u64);
        let dispatch = Self::groups_2d(threads.div_ceil(MAP_WG as u64));
        let row = dispatch[0] as u64 * MAP_WG as u64;
        let mut s = format!("@compute @workgroup_size({MAP_WG})\nfn {name}(@builtin(global_invocation_id) gid: vec3<u32>) {{\n{}", self.prologue());
        s.push_str(&format!("    let t = gid.y * {row}u + gid.x;\n    if (t >= {threads}u) {{\n        return;\n    }}\n"));
        s.push_str(&format!(
            "    var word = 0u;\n    for (var j = 0u; j < {per}u; j = j + 1u) {{\n        let e = t * {per}u + j;\n        if (e < {numel}u) {{\n            word = word | ({} << (j * {width}u));\n        }}\n    }}\n    fg_out[t] = word;\n}}\n",
            Self::bits(self.out, "fg_value(i32(e))")
        ));
        (s, [MAP_WG, 1, 1], dispatch)
    }

    pub(crate) fn new(k: &Kernel, opts: &RenderOptions) -> Self {
        let out = k.out_dtype;
        let scattered = matches!(k.body, Body::Reduce(_) | Body::Matmul(_)) && Self::is_packed(out);
        Wgsl {
            args: k.args.iter().map(|a| a.dtype).collect(),
            out,
            f16: dtypes(k).contains(&DType::F16),
            subgroups: opts.subgroups && matches!(k.body, Body::Reduce(_)),
            scattered,
        }
    }

    fn is_packed(d: DType) -> bool {
        matches!(d, DType::BF16 | DType::U8 | DType::Bool)
    }

    /// Storage element type of a binding.
    fn storage(d: DType) -> &'static str {
        match d {
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::F16 => "f16",
            _ => "u32",
        }
    }

    /// The packed bits of one element of `d` (low bits of a `u32`).
    fn bits(d: DType, v: &str) -> String {
        match d {
            DType::BF16 => format!("fg_bf16_bits({v})"),
            DType::U8 => format!("(u32({v}) & 0xffu)"),
            _ => format!("select(0u, 1u, {v})"),
        }
    }

    /// Elements per word and bits per element of a packed dtype.
    fn per_word(d: DType) -> (u32, u32) {
        if d == DType::BF16 {
            (2, 16)
        } else {
            (4, 8)
        }
    }

    /// A non-packed output element in its storage type.
    fn store_plain(d: DType, v: &str) -> String {
        if d == DType::F16 {
            // Rounded first, so the conversion is exact (see `round_f16`).
            format!("f16(fg_round_f16({v}))")
        } else {
            v.to_string()
        }
    }
}

impl Lang for Wgsl {
    fn dialect(&self) -> Dialect {
        Dialect::Wgsl
    }

    fn cty(&self, d: DType) -> &'static str {
        match d {
            DType::Bool => "bool",
            DType::U8 | DType::I32 => "i32",
            DType::F64 => "f64",
            _ => "f32",
        }
    }

    fn ix(&self) -> &'static str {
        "i32"
    }

    fn lit_ix(&self, v: i64) -> String {
        self.lit_i32(v)
    }

    fn lit_i32(&self, v: i64) -> String {
        if v == i32::MIN as i64 {
            "(-2147483647i - 1i)".into()
        } else if v < 0 {
            format!("(-{}i)", -v)
        } else {
            format!("{v}i")
        }
    }

    fn lit_u32(&self, v: u32) -> String {
        format!("{v}u")
    }

    fn lit_u64(&self, v: u64) -> String {
        format!("{v}u")
    }

    fn lit_float(&self, v: f64, _d: DType) -> String {
        // Debug prints the shortest text that reads back as the same f32, always with '.' or 'e'.
        let s = format!("{:?}", v as f32);
        if v < 0.0 {
            format!("({s}f)")
        } else {
            format!("{s}f")
        }
    }

    fn decl(&self, name: &str, ty: &str, val: &str) -> String {
        format!("let {name}: {ty} = {val};")
    }

    fn select(&self, cond: &str, t: &str, f: &str) -> String {
        format!("select({f}, {t}, {cond})")
    }

    fn conv(&self, to: DType, v: &str) -> String {
        format!("{}({v})", self.cty(to))
    }

    fn conv_ix(&self, v: &str) -> String {
        v.to_string()
    }

    fn to_u32(&self, v: &str) -> String {
        format!("u32({v})")
    }

    fn wrap_int(&self, op: char, a: &str, b: &str) -> String {
        // WGSL defines runtime i32 arithmetic as wrapping.
        format!("({a} {op} {b})")
    }

    fn clamp_int(&self, v: &str, lo: i64, hi: i64) -> String {
        format!("clamp({v}, {}, {})", self.lit_i32(lo), self.lit_i32(hi))
    }

    /// As CUDA (see `row_cache`): with wgpu's index checks off (Vulkan,
    /// see `backend/wgpu/pipelines.rs`) the driver keeps the array in
    /// registers; with them on, each access clamps its index first.
    fn row_cache_items(&self) -> usize {
        16
    }

    /// Through `fg_round_f16`: WGSL lets `f16(x)` round either way when x
    /// lies between two halves, and NVIDIA's Vulkan driver does not round
    /// to nearest, which put f16 results several ulp from the reference.
    fn round_f16(&self, v: &str) -> String {
        format!("fg_round_f16({v})")
    }

    fn math(&self, f: &str, _d: DType) -> String {
        match f {
            "rsqrt" => "inverseSqrt".into(),
            other => other.into(),
        }
    }

    fn load(&self, arg: usize, d: DType, idx: &str) -> String {
        match d {
            DType::F16 => format!("f32(fg_a{arg}[{idx}])"),
            DType::BF16 | DType::U8 | DType::Bool => format!("fg_ld{arg}({idx})"),
            _ => format!("fg_a{arg}[{idx}]"),
        }
    }

    fn fn_head(
        &self,
        name: &str,
        params: &[(String, String)],
        ret: Option<&str>,
        _buffers: bool,
    ) -> String {
        let ps: Vec<String> = params.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        match ret {
            Some(r) => format!("fn {name}({}) -> {r} {{", ps.join(", ")),
            None => format!("fn {name}({}) {{", ps.join(", ")),
        }
    }

    fn call(&self, name: &str, args: &[String], _buffers: bool) -> String {
        format!("{name}({})", args.join(", "))
    }

    fn helper_src(&self, name: &str) -> Option<String> {
        Some(
            match name {
                "fg_isnan_f32" => "fn fg_isnan_f32(x: f32) -> bool {\n    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;\n}\n",
                "fg_from_bits_f32" => {
                    // A function call keeps non-finite constants out of WGSL's const evaluation, which rejects them.
                    "fn fg_from_bits_f32(b: u32) -> f32 {\n    return bitcast<f32>(b);\n}\n"
                }
                "fg_max_f32" => "fn fg_max_f32(a: f32, b: f32) -> f32 {\n    if (fg_isnan_f32(a) || fg_isnan_f32(b)) {\n        return fg_from_bits_f32(0x7fc00000u);\n    }\n    return max(a, b);\n}\n",
                "fg_min_f32" => "fn fg_min_f32(a: f32, b: f32) -> f32 {\n    if (fg_isnan_f32(a) || fg_isnan_f32(b)) {\n        return fg_from_bits_f32(0x7fc00000u);\n    }\n    return min(a, b);\n}\n",
                "fg_relu_f32" => "fn fg_relu_f32(x: f32) -> f32 {\n    if (x > 0.0 || fg_isnan_f32(x)) {\n        return x;\n    }\n    return 0.0;\n}\n",
                // Some backends build tanh from exp and overflow to NaN for large |x|; tanh(±10) is ±1 in f32.
                "fg_tanh_f32" => "fn fg_tanh_f32(x: f32) -> f32 {\n    if (fg_isnan_f32(x)) {\n        return x;\n    }\n    return tanh(clamp(x, -10.0, 10.0));\n}\n",
                // 32 x 32 -> 64-bit unsigned product as (high, low) words.
                "fg_mulwide" => concat!(
                    "fn fg_mulwide(a: u32, b: u32) -> vec2<u32> {\n",
                    "    let al = a & 0xffffu;\n",
                    "    let ah = a >> 16u;\n",
                    "    let bl = b & 0xffffu;\n",
                    "    let bh = b >> 16u;\n",
                    "    let ll = al * bl;\n",
                    "    let lh = al * bh;\n",
                    "    let hl = ah * bl;\n",
                    "    let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);\n",
                    "    return vec2<u32>(ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u), (ll & 0xffffu) | (mid << 16u));\n",
                    "}\n"
                ),
                // Payne-Hanek reduction of |x| >= 1 (finite) by pi/2 with the bits
                // of 2/pi: returns (quadrant, r) with |x| = quadrant * pi/2 + r
                // (mod 2 pi) and |r| <= pi/4, exact to ~2^-24 for every f32.
                "fg_trig_reduce" => concat!(
                    "fn fg_trig_reduce(ax: f32) -> vec2<f32> {\n",
                    "    var tw = array<u32, 9>(0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au);\n",
                    "    let bits = bitcast<u32>(ax);\n",
                    "    let m = (bits & 0x7fffffu) | 0x800000u;\n",
                    "    // ax = m * 2^s; the window of 64 bits of 2/pi starts at bit q = s - 1.\n",
                    "    let q = i32((bits >> 23u) & 0xffu) - 151;\n",
                    "    var hi: u32;\n",
                    "    var lo: u32;\n",
                    "    if (q <= 0) {\n",
                    "        let z = u32(1 - q);\n",
                    "        hi = tw[0] >> z;\n",
                    "        lo = (tw[0] << (32u - z)) | (tw[1] >> z);\n",
                    "    } else {\n",
                    "        let off = u32(q - 1);\n",
                    "        let wi = off / 32u;\n",
                    "        let sh = off % 32u;\n",
                    "        if (sh == 0u) {\n",
                    "            hi = tw[wi];\n",
                    "            lo = tw[wi + 1u];\n",
                    "        } else {\n",
                    "            hi = (tw[wi] << sh) | (tw[wi + 1u] >> (32u - sh));\n",
                    "            lo = (tw[wi + 1u] << sh) | (tw[wi + 2u] >> (32u - sh));\n",
                    "        }\n",
                    "    }\n",
                    "    // m * window, scaled by 2^-62: bits 62-63 are the quadrant, below them the fraction.\n",
                    "    let pl = fg_mulwide(m, lo);\n",
                    "    let ph = fg_mulwide(m, hi);\n",
                    "    let w1 = pl.x + ph.y;\n",
                    "    var n = (w1 >> 30u) & 3u;\n",
                    "    let fb = (w1 << 2u) | (pl.y >> 30u);\n",
                    "    var f = f32(fb >> 8u) * (1.0 / 16777216.0);\n",
                    "    if (f >= 0.5) {\n",
                    "        f = f - 1.0;\n",
                    "        n = (n + 1u) & 3u;\n",
                    "    }\n",
                    "    return vec2<f32>(f32(n), f * 1.5707963267948966);\n",
                    "}\n"
                ),
                "fg_sin_f32" => concat!(
                    "fn fg_sin_f32(x: f32) -> f32 {\n",
                    "    let ax = abs(x);\n",
                    "    if (!(ax >= 1.0) || ax > 3.4028234e38) {\n",
                    "        return sin(x);\n",
                    "    }\n",
                    "    let t = fg_trig_reduce(ax);\n",
                    "    let n = u32(t.x);\n",
                    "    var v = select(sin(t.y), cos(t.y), (n & 1u) == 1u);\n",
                    "    if (n >= 2u) {\n",
                    "        v = -v;\n",
                    "    }\n",
                    "    return select(v, -v, x < 0.0);\n",
                    "}\n"
                ),
                "fg_cos_f32" => concat!(
                    "fn fg_cos_f32(x: f32) -> f32 {\n",
                    "    let ax = abs(x);\n",
                    "    if (!(ax >= 1.0) || ax > 3.4028234e38) {\n",
                    "        return cos(x);\n",
                    "    }\n",
                    "    let t = fg_trig_reduce(ax);\n",
                    "    let n = u32(t.x);\n",
                    "    var v = select(cos(t.y), sin(t.y), (n & 1u) == 1u);\n",
                    "    if (n == 1u || n == 2u) {\n",
                    "        v = -v;\n",
                    "    }\n",
                    "    return v;\n",
                    "}\n"
                ),
                "fg_sigmoid_f32" => "fn fg_sigmoid_f32(x: f32) -> f32 {\n    return 1.0 / (1.0 + exp(-x));\n}\n",
                "fg_silu_f32" => "fn fg_silu_f32(x: f32) -> f32 {\n    return x / (1.0 + exp(-x));\n}\n",
                // WGSL has no erf: Taylor series below 0.5 (where Abramowitz-Stegun
                // 7.1.26 loses relative accuracy), A&S 7.1.26 (|error| < 1.5e-7) above.
                "fg_erf_f32" => concat!(
                    "fn fg_erf_f32(x: f32) -> f32 {\n",
                    "    let ax = abs(x);\n",
                    "    if (ax < 0.5) {\n",
                    "        let t = x * x;\n",
                    "        return x * (1.1283791670955126 + t * (-0.37612638903183754 + t * (0.11283791670955126 + t * (-0.026866170645131252 + t * (0.005223977625442188 + t * (-0.0008548327023450852 + t * 0.00012055332981789664))))));\n",
                    "    }\n",
                    "    let p = 1.0 / (1.0 + 0.3275911 * ax);\n",
                    "    let poly = p * (0.254829592 + p * (-0.284496736 + p * (1.421413741 + p * (-1.453152027 + p * 1.061405429))));\n",
                    "    let y = 1.0 - poly * exp(-ax * ax);\n",
                    "    return select(y, -y, x < 0.0);\n",
                    "}\n"
                ),
                "fg_gelu_f32" => "fn fg_gelu_f32(x: f32) -> f32 {\n    return 0.5 * x * (1.0 + fg_erf_f32(x * 0.7071067811865476));\n}\n",
                "fg_gelu_tanh_f32" => "fn fg_gelu_tanh_f32(x: f32) -> f32 {\n    return 0.5 * x * (1.0 + fg_tanh_f32(0.7978845608028654 * (x + 0.044715 * x * x * x)));\n}\n",
                // WGSL's pow is undefined for x < 0; this follows C's powf: negative
                // bases with integer exponents keep the sign of odd powers, other
                // negative bases give NaN, pow(x, 0) = pow(1, y) = 1 even for NaN.
                "fg_pow_f32" => concat!(
                    "fn fg_pow_f32(x: f32, y: f32) -> f32 {\n",
                    "    if (y == 0.0 || x == 1.0) {\n",
                    "        return 1.0;\n",
                    "    }\n",
                    "    if (fg_isnan_f32(x) || fg_isnan_f32(y)) {\n",
                    "        return fg_from_bits_f32(0x7fc00000u);\n",
                    "    }\n",
                    "    let ax = abs(x);\n",
                    "    var r: f32;\n",
                    "    if (ax == 0.0) {\n",
                    "        r = select(fg_from_bits_f32(0x7f800000u), 0.0, y > 0.0);\n",
                    "    } else if (ax == 1.0) {\n",
                    "        r = 1.0;\n",
                    "    } else {\n",
                    "        r = exp2(y * log2(ax));\n",
                    "    }\n",
                    "    if (bitcast<u32>(x) >= 0x80000000u) {\n",
                    "        if (floor(y) != y) {\n",
                    "            return select(r, fg_from_bits_f32(0x7fc00000u), x < 0.0);\n",
                    "        }\n",
                    "        if (abs(y) < 16777216.0 && fract(y * 0.5) != 0.0) {\n",
                    "            return -r;\n",
                    "        }\n",
                    "    }\n",
                    "    return r;\n",
                    "}\n"
                ),
                "fg_f2i_f32" => concat!(
                    "fn fg_f2i_f32(x: f32) -> i32 {\n",
                    "    if (fg_isnan_f32(x)) {\n",
                    "        return 0i;\n",
                    "    }\n",
                    "    if (x >= 2147483648.0) {\n",
                    "        return 2147483647i;\n",
                    "    }\n",
                    "    if (x <= -2147483648.0) {\n",
                    "        return -2147483647i - 1i;\n",
                    "    }\n",
                    "    return i32(x);\n",
                    "}\n"
                ),
                "fg_f2u8_f32" => "fn fg_f2u8_f32(x: f32) -> i32 {\n    if (fg_isnan_f32(x)) {\n        return 0i;\n    }\n    return i32(clamp(x, 0.0, 255.0));\n}\n",
                "fg_idiv_i32" => "fn fg_idiv_i32(a: i32, b: i32) -> i32 {\n    if (b == 0i) {\n        return 0i;\n    }\n    if (b == -1i) {\n        return 0i - a;\n    }\n    return a / b;\n}\n",
                "fg_ipow_i32" => concat!(
                    "fn fg_ipow_i32(x: i32, y: i32) -> i32 {\n",
                    "    if (y < 0i) {\n",
                    "        return 0i;\n",
                    "    }\n",
                    "    var base = bitcast<u32>(x);\n",
                    "    var e = bitcast<u32>(y);\n",
                    "    var r = 1u;\n",
                    "    while (e != 0u) {\n",
                    "        if ((e & 1u) != 0u) {\n",
                    "            r = r * base;\n",
                    "        }\n",
                    "        base = base * base;\n",
                    "        e = e >> 1u;\n",
                    "    }\n",
                    "    return bitcast<i32>(r);\n",
                    "}\n"
                ),
                "fg_abs_i32" => "fn fg_abs_i32(a: i32) -> i32 {\n    return select(a, 0i - a, a < 0i);\n}\n",
                "fg_argbetter_f32" => concat!(
                    "fn fg_argbetter_f32(v: f32, i: i32, bv: f32, bi: i32) -> bool {\n",
                    "    let nv = fg_isnan_f32(v);\n",
                    "    let nb = fg_isnan_f32(bv);\n",
                    "    if (nv != nb) {\n",
                    "        return nv;\n",
                    "    }\n",
                    "    if (nv) {\n",
                    "        return i < bi;\n",
                    "    }\n",
                    "    return v > bv || (v == bv && i < bi);\n",
                    "}\n"
                ),
                "fg_argbetter_i32" => "fn fg_argbetter_i32(v: i32, i: i32, bv: i32, bi: i32) -> bool {\n    return v > bv || (v == bv && i < bi);\n}\n",
                // Round to nearest even like half::bf16::from_f32; NaN stays a quiet NaN.
                "fg_bf16_bits" => concat!(
                    "fn fg_bf16_bits(x: f32) -> u32 {\n",
                    "    let u = bitcast<u32>(x);\n",
                    "    if ((u & 0x7fffffffu) > 0x7f800000u) {\n",
                    "        return (u >> 16u) | 0x40u;\n",
                    "    }\n",
                    "    return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;\n",
                    "}\n"
                ),
                // To the nearest f16 (ties to even), as an f32: NaN as is
                // (found from its bits: a driver may fold `x != x` to false),
                // past the largest half to infinity, subnormal halves in
                // steps of 2^-24 (`round` ties to even), normal ones by
                // rounding the 13 low mantissa bits away.
                "fg_round_f16" => concat!(
                    "fn fg_round_f16(x: f32) -> f32 {\n",
                    "    let b = bitcast<u32>(x);\n",
                    "    let m = b & 0x7fffffffu;\n",
                    "    if (m > 0x7f800000u) {\n        return x;\n    }\n",
                    "    if (m >= 0x477ff000u) {\n        return bitcast<f32>((b & 0x80000000u) | 0x7f800000u);\n    }\n",
                    "    if (m < 0x38800000u) {\n        return round(x * 16777216.0) * 5.9604644775390625e-8;\n    }\n",
                    "    return bitcast<f32>((b + 0xfffu + ((b >> 13u) & 1u)) & 0xffffe000u);\n",
                    "}\n"
                ),
                "fg_round_bf16" => "fn fg_round_bf16(x: f32) -> f32 {\n    return bitcast<f32>(fg_bf16_bits(x) << 16u);\n}\n",
                // core/src/rng.rs, operation for operation, so draws match the CPU.
                "fg_pcg_hash" => concat!(
                    "fn fg_pcg_hash(x: u32) -> u32 {\n",
                    "    let state = x * 747796405u + 2891336453u;\n",
                    "    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;\n",
                    "    return (word >> 22u) ^ word;\n",
                    "}\n"
                ),
                "fg_uniform" => "fn fg_uniform(key: u32, index: u32) -> f32 {\n    return f32(fg_pcg_hash(index ^ key) >> 8u) * (1.0 / 16777216.0);\n}\n",
                "fg_normal" => concat!(
                    "fn fg_normal(key: u32, index: u32) -> f32 {\n",
                    "    let u1 = fg_uniform(key, index * 2u);\n",
                    "    let u2 = fg_uniform(key, index * 2u + 1u);\n",
                    "    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.2831855 * u2);\n",
                    "}\n"
                ),
                _ => return None,
            }
            .to_string(),
        )
    }

    fn io_helpers(&self) -> Vec<&'static str> {
        let mut h = Vec::new();
        if self.out == DType::BF16 {
            h.push("fg_bf16_bits");
        }
        if self.f16 {
            h.push("fg_round_f16");
        }
        h
    }

    fn load_fns(&self) -> String {
        let mut s = String::new();
        for (i, &d) in self.args.iter().enumerate() {
            let body = match d {
                DType::BF16 => format!(
                    "fn fg_ld{i}(i: i32) -> f32 {{\n    let w = fg_a{i}[u32(i) >> 1u];\n    return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1i) == 1i));\n}}\n\n"
                ),
                DType::U8 => format!("fn fg_ld{i}(i: i32) -> i32 {{\n    let w = fg_a{i}[u32(i) >> 2u];\n    return i32((w >> ((u32(i) & 3u) * 8u)) & 0xffu);\n}}\n\n"),
                DType::Bool => format!("fn fg_ld{i}(i: i32) -> bool {{\n    let w = fg_a{i}[u32(i) >> 2u];\n    return ((w >> ((u32(i) & 3u) * 8u)) & 0xffu) != 0u;\n}}\n\n"),
                _ => continue,
            };
            s.push_str(&body);
        }
        s
    }

    fn store_fn(&self) -> String {
        let t = self.cty(self.out);
        if self.scattered {
            let (per, width) = Self::per_word(self.out);
            let mask = if width == 16 { "0xffffu" } else { "0xffu" };
            // Every element owns distinct bits of its word: clearing then setting
            // them atomically is exact whatever the word held and whoever else
            // writes its other elements.
            format!(
                "fn fg_store(e: i32, v: {t}) {{\n    let w = u32(e) / {per}u;\n    let sh = (u32(e) % {per}u) * {width}u;\n    atomicAnd(&fg_out[w], ~({mask} << sh));\n    atomicOr(&fg_out[w], {} << sh);\n}}\n",
                Self::bits(self.out, "v")
            )
        } else {
            format!(
                "fn fg_store(e: i32, v: {t}) {{\n    fg_out[e] = {};\n}}\n",
                Self::store_plain(self.out, "v")
            )
        }
    }

    fn elementwise_entry(&self, name: &str, numel: usize) -> (String, [u32; 3], [u32; 3]) {
        if Self::is_packed(self.out) {
            return self.packed_elementwise_entry(name, numel);
        }
        // Each invocation computes MAP_UNROLL elements a workgroup width
        // apart (loads stay coalesced and several are in flight per
        // invocation), as the CUDA renderer does: one element per thread
        // reached 51% of the copy bandwidth on an H200 there, four 94%.
        let chunk = MAP_WG as u64 * MAP_UNROLL;
        let groups = (numel as u64).div_ceil(chunk);
        let dispatch = Self::groups_2d(groups);
        let mut s = format!(
            "@compute @workgroup_size({MAP_WG})\nfn {name}(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {{\n{}",
            self.prologue()
        );
        s.push_str(&format!(
            "    let b = (wid.y * {}u + wid.x) * {chunk}u + lid.x;\n    if (b + {}u < {numel}u) {{\n",
            dispatch[0],
            (MAP_UNROLL - 1) * MAP_WG as u64
        ));
        for u in 0..MAP_UNROLL {
            s.push_str(&format!(
                "        let v{u} = fg_value(i32(b + {}u));\n",
                u * MAP_WG as u64
            ));
        }
        for u in 0..MAP_UNROLL {
            s.push_str(&format!(
                "        fg_out[b + {}u] = {};\n",
                u * MAP_WG as u64,
                Self::store_plain(self.out, &format!("v{u}"))
            ));
        }
        s.push_str(&format!(
            "    }} else {{\n        for (var e = b; e < {numel}u; e = e + {MAP_WG}u) {{\n            fg_out[e] = {};\n        }}\n    }}\n}}\n",
            Self::store_plain(self.out, "fg_value(i32(e))")
        ));
        (s, [MAP_WG, 1, 1], dispatch)
    }

    fn row_dispatch(&self, rows: usize) -> ([u32; 3], u64) {
        let d = Self::groups_2d(rows as u64);
        (d, (d[0] as u64).max(1))
    }

    fn reduce_template(&self) -> &'static str {
        include_str!("../../../shaders/reduce.wgsl")
    }

    // Subgroup arithmetic takes f32, f16, i32 and u32; f16 and bf16 values
    // accumulate in f32 here anyway.
    fn subgroup_reduce(&self, acc: DType) -> bool {
        self.subgroups && matches!(acc, DType::F32 | DType::I32)
    }

    fn subgroup_combine(&self, op: ReduceOp, acc: DType, v: &str) -> String {
        match (op, acc) {
            (ReduceOp::Sum, _) => format!("subgroupAdd({v})"),
            // subgroupMax/Min leave NaN unspecified; fusegraph's max and min
            // propagate it, as the tree's fg_max_f32 does.
            (ReduceOp::Max, DType::F32) => format!(
                "select(subgroupMax({v}), fg_from_bits_f32(0x7fc00000u), subgroupAny(fg_isnan_f32({v})))"
            ),
            (ReduceOp::Min, DType::F32) => format!(
                "select(subgroupMin({v}), fg_from_bits_f32(0x7fc00000u), subgroupAny(fg_isnan_f32({v})))"
            ),
            (ReduceOp::Max, _) => format!("subgroupMax({v})"),
            _ => format!("subgroupMin({v})"),
        }
    }

    fn subgroup_params(&self) -> String {
        if self.subgroups {
            ", @builtin(subgroup_id) sg_id: u32, @builtin(num_subgroups) sg_count: u32".into()
        } else {
            String::new()
        }
    }

    fn matmul_template(&self) -> &'static str {
        include_str!("../../../shaders/matmul.wgsl")
    }

    fn matmul_tile(&self) -> u64 {
        128
    }

    fn prologue(&self) -> String {
        (0..self.args.len())
            .map(|i| format!("    _ = arrayLength(&fg_a{i});\n"))
            .collect()
    }

    fn params(&self) -> String {
        String::new()
    }

    fn bufs(&self) -> String {
        String::new()
    }

    fn words(&self, d: DType, len: usize) -> usize {
        // WebGPU rejects zero-sized bindings and sizes that are not whole words.
        (len * d.size_in_bytes()).div_ceil(4).max(1)
    }

    fn packed(&self, d: DType) -> bool {
        Self::is_packed(d)
    }

    fn assemble(&self, name: &str, kind: &str, helpers: &str, funcs: &str, entry: &str) -> String {
        let mut s = String::new();
        if self.f16 {
            s.push_str("enable f16;\n\n");
        }
        // No `enable subgroups;`: naga (the only compiler these kernels meet,
        // see `RenderOptions::subgroups`) takes the builtins without it and
        // rejects the directive.
        s.push_str(&format!("// {name}: fusegraph {kind} kernel\n\n"));
        for (i, &d) in self.args.iter().enumerate() {
            s.push_str(&format!(
                "@group(0) @binding({i}) var<storage, read> fg_a{i}: array<{}>;\n",
                Self::storage(d)
            ));
        }
        let out_t = if self.scattered {
            "atomic<u32>"
        } else {
            Self::storage(self.out)
        };
        s.push_str(&format!(
            "@group(0) @binding({}) var<storage, read_write> fg_out: array<{out_t}>;\n\n",
            self.args.len()
        ));
        s.push_str(helpers);
        s.push_str(funcs);
        s.push_str(entry);
        s
    }
}
