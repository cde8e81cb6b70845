//! The CUDA C dialect (compiled later by NVRTC for sm_90): `const` locals,
//! `?:`, buffers as `__restrict__` kernel parameters passed on to device
//! functions, `__half`/`__nv_bfloat16` storage with headers only when used.
//! Signed overflow is undefined in C++, so wrapping integer arithmetic goes
//! through `unsigned int`.

use super::render::{Lang, MAP_UNROLL, MAP_WG};
use super::Dialect;
use crate::dtype::DType;
use crate::schedule::{Body, ExprNode, Kernel};

pub(crate) struct Cuda {
    args: Vec<DType>,
    out: DType,
    /// `fg_idx` is `long long`: some buffer has 2^31 elements or more.
    idx64: bool,
    fp16_header: bool,
    bf16_header: bool,
}

/// Most blocks an elementwise launch uses; threads stride beyond it.
const MAX_BLOCKS: u64 = 1 << 20;
/// Most blocks a row reduction uses; blocks stride over further rows.
const MAX_ROW_BLOCKS: u64 = 1 << 24;

impl Cuda {
    pub(crate) fn new(k: &Kernel) -> Self {
        let mut ds: Vec<DType> = k.args.iter().map(|a| a.dtype).collect();
        ds.push(k.out_dtype);
        let storage = ds.clone();
        let mut add = |e: &crate::schedule::Expr| {
            ds.extend(e.dtypes.iter().copied());
            ds.extend(e.nodes.iter().filter_map(|n| {
                if let ExprNode::Cast(d, _) = n {
                    Some(*d)
                } else {
                    None
                }
            }));
        };
        match &k.body {
            Body::Map(m) => add(&m.expr),
            Body::Reduce(r) => add(&r.expr),
            Body::Matmul(mm) => add(&mm.epilogue),
            Body::Concat(_) | Body::Index(_) | Body::Conv(_) => {}
        }
        let biggest = k
            .args
            .iter()
            .map(|a| a.len)
            .chain([k.out_numel()])
            .max()
            .unwrap_or(0);
        Cuda {
            args: k.args.iter().map(|a| a.dtype).collect(),
            out: k.out_dtype,
            // Margin: index sums of in-bounds accesses stay below the largest length.
            idx64: biggest >= (i32::MAX as usize) / 2,
            // Rounding to f16 inside an expression also needs the conversion intrinsics.
            fp16_header: ds.contains(&DType::F16),
            bf16_header: storage.contains(&DType::BF16),
        }
    }

    fn storage(d: DType) -> &'static str {
        match d {
            DType::F32 => "float",
            DType::F64 => "double",
            DType::F16 => "__half",
            DType::BF16 => "__nv_bfloat16",
            DType::I32 => "int",
            DType::U8 | DType::Bool => "unsigned char",
        }
    }

    fn store(d: DType, v: &str) -> String {
        match d {
            DType::F16 => format!("__float2half_rn({v})"),
            DType::BF16 => format!("__float2bfloat16_rn({v})"),
            DType::U8 => format!("(unsigned char)({v})"),
            DType::Bool => format!("(unsigned char)(({v}) ? 1 : 0)"),
            _ => v.to_string(),
        }
    }

    /// A float helper for `float` (suffix f32) or `double` (f64), from one text.
    fn float_helper(base: &str, double: bool) -> Option<String> {
        let text = match base {
            "fg_isnan" => "__device__ __forceinline__ bool fg_isnan_$S($T x) { return x != x; }\n",
            "fg_from_bits" => {
                if double {
                    "__device__ __forceinline__ double fg_from_bits_f64(unsigned long long b) { return __longlong_as_double((long long)b); }\n"
                } else {
                    "__device__ __forceinline__ float fg_from_bits_f32(unsigned int b) { return __uint_as_float(b); }\n"
                }
            }
            "fg_max" => "__device__ __forceinline__ $T fg_max_$S($T a, $T b) {\n    if (fg_isnan_$S(a) || fg_isnan_$S(b)) return a + b;\n    return a > b ? a : b;\n}\n",
            "fg_min" => "__device__ __forceinline__ $T fg_min_$S($T a, $T b) {\n    if (fg_isnan_$S(a) || fg_isnan_$S(b)) return a + b;\n    return a < b ? a : b;\n}\n",
            "fg_relu" => "__device__ __forceinline__ $T fg_relu_$S($T x) { return (x > 0.0$f || fg_isnan_$S(x)) ? x : 0.0$f; }\n",
            "fg_tanh" => "__device__ __forceinline__ $T fg_tanh_$S($T x) { return tanh$m(x); }\n",
            "fg_sigmoid" => "__device__ __forceinline__ $T fg_sigmoid_$S($T x) { return 1.0$f / (1.0$f + exp$m(-x)); }\n",
            "fg_silu" => "__device__ __forceinline__ $T fg_silu_$S($T x) { return x / (1.0$f + exp$m(-x)); }\n",
            "fg_erf" => "__device__ __forceinline__ $T fg_erf_$S($T x) { return erf$m(x); }\n",
            "fg_gelu" => "__device__ __forceinline__ $T fg_gelu_$S($T x) { return 0.5$f * x * (1.0$f + fg_erf_$S(x * 0.70710678118654752440$f)); }\n",
            "fg_gelu_tanh" => {
                "__device__ __forceinline__ $T fg_gelu_tanh_$S($T x) { return 0.5$f * x * (1.0$f + fg_tanh_$S(0.79788456080286535588$f * (x + 0.044715$f * x * x * x))); }\n"
            }
            // CUDA's pow follows C99, including negative bases with integer exponents.
            "fg_pow" => "__device__ __forceinline__ $T fg_pow_$S($T x, $T y) { return pow$m(x, y); }\n",
            "fg_f2i" => concat!(
                "__device__ __forceinline__ int fg_f2i_$S($T x) {\n",
                "    if (fg_isnan_$S(x)) return 0;\n",
                "    if (x >= 2147483648.0$f) return 2147483647;\n",
                "    if (x <= -2147483648.0$f) return -2147483647 - 1;\n",
                "    return (int)x;\n",
                "}\n"
            ),
            "fg_f2u8" => concat!(
                "__device__ __forceinline__ int fg_f2u8_$S($T x) {\n",
                "    if (fg_isnan_$S(x) || x <= 0.0$f) return 0;\n",
                "    if (x >= 255.0$f) return 255;\n",
                "    return (int)x;\n",
                "}\n"
            ),
            "fg_argbetter" => concat!(
                "__device__ __forceinline__ bool fg_argbetter_$S($T v, int i, $T bv, int bi) {\n",
                "    const bool nv = fg_isnan_$S(v), nb = fg_isnan_$S(bv);\n",
                "    if (nv != nb) return nv;\n",
                "    if (nv) return i < bi;\n",
                "    return v > bv || (v == bv && i < bi);\n",
                "}\n"
            ),
            _ => return None,
        };
        let (t, s, f, m) = if double {
            ("double", "f64", "", "")
        } else {
            ("float", "f32", "f", "f")
        };
        Some(
            text.replace("$T", t)
                .replace("$S", s)
                .replace("$f", f)
                .replace("$m", m),
        )
    }
}

impl Lang for Cuda {
    fn dialect(&self) -> Dialect {
        Dialect::Cuda
    }

    fn cty(&self, d: DType) -> &'static str {
        match d {
            DType::Bool => "bool",
            DType::U8 | DType::I32 => "int",
            DType::F64 => "double",
            _ => "float",
        }
    }

    fn ix(&self) -> &'static str {
        "fg_idx"
    }

    fn lit_ix(&self, v: i64) -> String {
        if v > i32::MIN as i64 && v <= i32::MAX as i64 {
            self.lit_i32(v)
        } else if v < 0 {
            format!("(-{}LL)", -(v as i128))
        } else {
            format!("{v}LL")
        }
    }

    fn lit_i32(&self, v: i64) -> String {
        if v == i32::MIN as i64 {
            "(-2147483647 - 1)".into()
        } else if v < 0 {
            format!("(-{})", -v)
        } else {
            v.to_string()
        }
    }

    fn lit_u32(&self, v: u32) -> String {
        format!("{v}u")
    }

    fn lit_u64(&self, v: u64) -> String {
        format!("{v}ull")
    }

    fn lit_float(&self, v: f64, d: DType) -> String {
        // Debug prints the shortest text that reads back as the same value, always with '.' or 'e'.
        let s = if d == DType::F64 {
            format!("{v:?}")
        } else {
            format!("{:?}f", v as f32)
        };
        if v < 0.0 {
            format!("({s})")
        } else {
            s
        }
    }

    fn decl(&self, name: &str, ty: &str, val: &str) -> String {
        format!("const {ty} {name} = {val};")
    }

    fn select(&self, cond: &str, t: &str, f: &str) -> String {
        format!("({cond} ? {t} : {f})")
    }

    fn conv(&self, to: DType, v: &str) -> String {
        format!("(({}){v})", self.cty(to))
    }

    fn conv_ix(&self, v: &str) -> String {
        format!("((fg_idx){v})")
    }

    fn to_u32(&self, v: &str) -> String {
        format!("((unsigned int){v})")
    }

    fn wrap_int(&self, op: char, a: &str, b: &str) -> String {
        format!("((int)((unsigned int){a} {op} (unsigned int){b}))")
    }

    fn clamp_int(&self, v: &str, lo: i64, hi: i64) -> String {
        let (lo, hi) = (self.lit_i32(lo), self.lit_i32(hi));
        format!("({v} < {lo} ? {lo} : ({v} > {hi} ? {hi} : {v}))")
    }

    fn round_f16(&self, v: &str) -> String {
        format!("__half2float(__float2half_rn({v}))")
    }

    fn math(&self, f: &str, d: DType) -> String {
        let base = if f == "abs" { "fabs" } else { f };
        if d == DType::F64 {
            base.to_string()
        } else {
            format!("{base}f")
        }
    }

    fn load(&self, arg: usize, d: DType, idx: &str) -> String {
        match d {
            DType::F16 => format!("__half2float(fg_a{arg}[{idx}])"),
            DType::BF16 => format!("__bfloat162float(fg_a{arg}[{idx}])"),
            DType::U8 => format!("((int)fg_a{arg}[{idx}])"),
            DType::Bool => format!("(fg_a{arg}[{idx}] != 0)"),
            _ => format!("fg_a{arg}[{idx}]"),
        }
    }

    fn fn_head(
        &self,
        name: &str,
        params: &[(String, String)],
        ret: Option<&str>,
        buffers: bool,
    ) -> String {
        let mut ps: Vec<String> = Vec::new();
        if buffers {
            ps.push(self.params());
        }
        ps.extend(params.iter().map(|(n, t)| format!("{t} {n}")));
        format!(
            "__device__ __forceinline__ {} {name}({}) {{",
            ret.unwrap_or("void"),
            ps.join(", ")
        )
    }

    fn call(&self, name: &str, args: &[String], buffers: bool) -> String {
        let mut a: Vec<String> = Vec::new();
        if buffers {
            a.push(self.bufs());
        }
        a.extend(args.iter().cloned());
        format!("{name}({})", a.join(", "))
    }

    fn helper_src(&self, name: &str) -> Option<String> {
        if let Some(base) = name.strip_suffix("_f32") {
            if let Some(s) = Self::float_helper(base, false) {
                return Some(s);
            }
        }
        if let Some(base) = name.strip_suffix("_f64") {
            if let Some(s) = Self::float_helper(base, true) {
                return Some(s);
            }
        }
        Some(
            match name {
                "fg_idiv_i32" => "__device__ __forceinline__ int fg_idiv_i32(int a, int b) {\n    if (b == 0) return 0;\n    if (b == -1) return (int)(0u - (unsigned int)a);\n    return a / b;\n}\n",
                "fg_ipow_i32" => concat!(
                    "__device__ __forceinline__ int fg_ipow_i32(int x, int y) {\n",
                    "    if (y < 0) return 0;\n",
                    "    unsigned int base = (unsigned int)x, e = (unsigned int)y, r = 1u;\n",
                    "    while (e != 0u) {\n",
                    "        if (e & 1u) r *= base;\n",
                    "        base *= base;\n",
                    "        e >>= 1;\n",
                    "    }\n",
                    "    return (int)r;\n",
                    "}\n"
                ),
                "fg_abs_i32" => "__device__ __forceinline__ int fg_abs_i32(int a) { return a < 0 ? (int)(0u - (unsigned int)a) : a; }\n",
                "fg_argbetter_i32" => "__device__ __forceinline__ bool fg_argbetter_i32(int v, int i, int bv, int bi) { return v > bv || (v == bv && i < bi); }\n",
                // Round to nearest even like half::bf16::from_f32; NaN stays a quiet NaN.
                "fg_bf16_bits" => concat!(
                    "__device__ __forceinline__ unsigned int fg_bf16_bits(float x) {\n",
                    "    const unsigned int u = __float_as_uint(x);\n",
                    "    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;\n",
                    "    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;\n",
                    "}\n"
                ),
                "fg_round_bf16" => "__device__ __forceinline__ float fg_round_bf16(float x) { return __uint_as_float(fg_bf16_bits(x) << 16); }\n",
                // core/src/rng.rs, operation for operation, so draws match the CPU.
                "fg_pcg_hash" => concat!(
                    "__device__ __forceinline__ unsigned int fg_pcg_hash(unsigned int x) {\n",
                    "    const unsigned int state = x * 747796405u + 2891336453u;\n",
                    "    const unsigned int word = ((state >> ((state >> 28) + 4u)) ^ state) * 277803737u;\n",
                    "    return (word >> 22) ^ word;\n",
                    "}\n"
                ),
                "fg_uniform" => "__device__ __forceinline__ float fg_uniform(unsigned int key, unsigned int index) { return (float)(fg_pcg_hash(index ^ key) >> 8) * (1.0f / 16777216.0f); }\n",
                "fg_normal" => concat!(
                    "__device__ __forceinline__ float fg_normal(unsigned int key, unsigned int index) {\n",
                    "    const float u1 = fg_uniform(key, index * 2u);\n",
                    "    const float u2 = fg_uniform(key, index * 2u + 1u);\n",
                    "    return (float)(sqrt(-2.0 * log(1.0 - (double)u1)) * cos(6.283185307179586 * (double)u2));\n",
                    "}\n"
                ),
                _ => return None,
            }
            .to_string(),
        )
    }

    fn io_helpers(&self) -> Vec<&'static str> {
        vec![]
    }

    fn load_fns(&self) -> String {
        String::new()
    }

    fn store_fn(&self) -> String {
        let head = self.fn_head(
            "fg_store",
            &[
                ("e".into(), "fg_idx".into()),
                ("v".into(), self.cty(self.out).into()),
            ],
            None,
            true,
        );
        format!(
            "{head}\n    fg_out[e] = {};\n}}\n",
            Self::store(self.out, "v")
        )
    }

    /// Each thread computes [`MAP_UNROLL`] elements a block width apart
    /// (every load stays coalesced), all loads before any store: with one
    /// element per thread a kernel that reads one or two inputs has too few
    /// bytes in flight to keep HBM busy.
    fn elementwise_entry(&self, name: &str, numel: usize) -> (String, [u32; 3], [u32; 3]) {
        let chunk = MAP_WG as u64 * MAP_UNROLL;
        let blocks = (numel as u64).div_ceil(chunk).min(MAX_BLOCKS);
        let value = |e: &str| self.call("fg_value", &[e.to_string()], true);
        let n = self.lit_ix(numel as i64);
        let mut s = format!(
            "extern \"C\" __global__ void __launch_bounds__({MAP_WG}) {name}({}) {{\n{}    for (fg_idx b = (fg_idx)blockIdx.x * {chunk} + threadIdx.x; b < {n}; b += (fg_idx)gridDim.x * {chunk}) {{\n        if ({n} - b > {}) {{\n",
            self.params(),
            self.prologue(),
            (MAP_UNROLL - 1) * MAP_WG as u64,
        );
        for u in 0..MAP_UNROLL {
            let e = format!("b + {}", u * MAP_WG as u64);
            s.push_str(&format!("            const auto v{u} = {};\n", value(&e)));
        }
        for u in 0..MAP_UNROLL {
            s.push_str(&format!(
                "            fg_out[b + {}] = {};\n",
                u * MAP_WG as u64,
                Self::store(self.out, &format!("v{u}"))
            ));
        }
        s.push_str(&format!(
            "        }} else {{\n            for (fg_idx e = b; e < {n}; e += {MAP_WG}) {{\n                fg_out[e] = {};\n            }}\n        }}\n    }}\n}}\n",
            Self::store(self.out, &value("e"))
        ));
        (s, [MAP_WG, 1, 1], [blocks as u32, 1, 1])
    }

    fn row_dispatch(&self, rows: usize) -> ([u32; 3], u64) {
        let g = (rows as u64).min(MAX_ROW_BLOCKS);
        ([g as u32, 1, 1], g)
    }

    fn reduce_template(&self) -> &'static str {
        include_str!("../../../shaders/reduce.cu")
    }

    // 16 f32 per cached load: a 4096-wide row over 256 threads, which ran
    // at the copy bandwidth on an H200 (see `row_cache`).
    fn row_cache_items(&self) -> usize {
        16
    }

    // WGSL keeps a workgroup per row even for short rows: there, with no
    // barrier between a stage and its use, Vulkan's compilers (lavapipe's
    // LLVM measurably) unroll the short loop and fold `x - x` to 0 under
    // WGSL's relaxed float rules, which turned `var` of one element into
    // 0 instead of the NaN of 0 * inf. NVRTC keeps IEEE semantics.
    fn serial_short_rows(&self) -> bool {
        true
    }

    fn matmul_template(&self) -> &'static str {
        include_str!("../../../shaders/matmul.cu")
    }

    /// Programmatic dependent launch (sm_90 and later): the backend lets a
    /// kernel start launching while the one before it on the stream is still
    /// running, so every kernel first waits until that one has finished and
    /// its writes are visible (which makes the pair as ordered as a plain
    /// launch), then lets the next kernel start launching. What overlaps is
    /// the launch latency between dependent kernels, about a microsecond
    /// each, which is most of the time of a replayed graph of small
    /// kernels. Both instructions do nothing when no launch asked for it.
    fn prologue(&self) -> String {
        "#if __CUDA_ARCH__ >= 900\n    asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n    asm volatile(\"griddepcontrol.launch_dependents;\");\n#endif\n".to_string()
    }

    fn params(&self) -> String {
        let mut ps: Vec<String> = self
            .args
            .iter()
            .enumerate()
            .map(|(i, &d)| format!("const {}* __restrict__ fg_a{i}", Self::storage(d)))
            .collect();
        ps.push(format!("{}* __restrict__ fg_out", Self::storage(self.out)));
        ps.join(", ")
    }

    fn bufs(&self) -> String {
        let mut a: Vec<String> = (0..self.args.len()).map(|i| format!("fg_a{i}")).collect();
        a.push("fg_out".into());
        a.join(", ")
    }

    fn words(&self, _d: DType, len: usize) -> usize {
        len
    }

    fn packed(&self, _d: DType) -> bool {
        false
    }

    fn assemble(&self, name: &str, kind: &str, helpers: &str, funcs: &str, entry: &str) -> String {
        let mut s = format!("// {name}: fusegraph {kind} kernel\n");
        if self.fp16_header {
            s.push_str("#include <cuda_fp16.h>\n");
        }
        if self.bf16_header {
            s.push_str("#include <cuda_bf16.h>\n");
        }
        s.push_str(if self.idx64 {
            "typedef long long fg_idx;\n\n"
        } else {
            "typedef int fg_idx;\n\n"
        });
        s.push_str(helpers);
        s.push_str(funcs);
        s.push_str(entry);
        s
    }
}
