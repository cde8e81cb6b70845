//! The C-like renderer shared by WGSL and CUDA C. It walks the kernel IR and
//! emits index math with shapes and strides baked in as constants, and one
//! immutable declaration per expression node; everything that differs
//! between the dialects goes through [`Lang`].

use super::row_cache;
use super::{BindingInfo, Dialect, RenderedKernel};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::graph::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::schedule::{
    Body, ConcatBody, Expr, ExprId, ExprNode, IndexBody, Kernel, MapBody, MatmulBody, ReduceBody,
};

/// Invocations per workgroup (threads per block) of elementwise kernels.
pub(crate) const MAP_WG: u32 = 256;
/// Elements each invocation of an elementwise kernel computes, a workgroup
/// width apart (CUDA, and WGSL for unpacked outputs).
pub(crate) const MAP_UNROLL: u64 = 4;
/// Reductions over rows at most this long run one thread per row.
const SERIAL_ROW_LEN: usize = 16;
/// Column reductions run one thread per column from this many columns on
/// (fewer would leave most of the GPU idle; the split pass makes more).
const SERIAL_MIN_COLUMNS: usize = 4096;
/// Adjacent threads must read adjacent words for a warp's loads to coalesce.
const COLUMN_WARP: usize = 32;

/// True when a reduction keeps the domain's last axis, which every load
/// reads with stride 1 (or broadcasts): consecutive rows are then
/// neighbouring words of memory, so one thread per row reads a warp's rows
/// with one coalesced load per step, where a workgroup per row would read
/// a column with a large stride (batch norm's per-channel sums of NHWC).
fn reads_columns(red: &ReduceBody) -> bool {
    red.keeps_contiguous_last_axis() && red.shape.last().is_some_and(|&d| d >= COLUMN_WARP)
}

/// WebGPU's default `maxComputeWorkgroupsPerDimension`, also CUDA's grid y/z limit.
pub(crate) const MAX_GROUPS: u64 = 65_535;

/// What a dialect overrides. Values are rendered in *compute types*
/// (f16/bf16 compute in f32, u8 in i32); storage types only appear in loads
/// and stores.
pub(crate) trait Lang {
    fn dialect(&self) -> Dialect;
    /// The type values of `d` compute in.
    fn cty(&self, d: DType) -> &'static str;
    /// The signed type of indices and coordinates.
    fn ix(&self) -> &'static str;
    fn lit_ix(&self, v: i64) -> String;
    fn lit_i32(&self, v: i64) -> String;
    fn lit_u32(&self, v: u32) -> String;
    fn lit_u64(&self, v: u64) -> String;
    /// A finite float literal in the compute type of `d` (F32 or F64).
    fn lit_float(&self, v: f64, d: DType) -> String;
    /// An immutable local.
    fn decl(&self, name: &str, ty: &str, val: &str) -> String;
    fn select(&self, cond: &str, t: &str, f: &str) -> String;
    /// Plain numeric conversion into the compute type of `to`.
    fn conv(&self, to: DType, v: &str) -> String;
    fn conv_ix(&self, v: &str) -> String;
    fn to_u32(&self, v: &str) -> String;
    /// Two's-complement wrapping `+`, `-` or `*` on i32.
    fn wrap_int(&self, op: char, a: &str, b: &str) -> String;
    fn clamp_int(&self, v: &str, lo: i64, hi: i64) -> String;
    /// Rounds an f32 value to the nearest f16 and back.
    fn round_f16(&self, v: &str) -> String;
    /// Builtin math function `f` (exp, log, sqrt, rsqrt, sin, cos, abs, fma) for compute type `d`.
    fn math(&self, f: &str, d: DType) -> String;
    /// Element `idx` of argument `arg` (storage dtype `d`) in its compute type.
    fn load(&self, arg: usize, d: DType, idx: &str) -> String;
    /// The head of a function, through the opening brace. `buffers`: the
    /// function touches kernel buffers (CUDA passes them as parameters).
    fn fn_head(
        &self,
        name: &str,
        params: &[(String, String)],
        ret: Option<&str>,
        buffers: bool,
    ) -> String;
    fn call(&self, name: &str, args: &[String], buffers: bool) -> String;
    /// Source of a named helper function (see [`helper_deps`]).
    fn helper_src(&self, name: &str) -> Option<String>;
    /// Helpers the dialect's loads and stores call.
    fn io_helpers(&self) -> Vec<&'static str>;
    /// Per-argument load functions (WGSL unpacks packed words).
    fn load_fns(&self) -> String;
    /// `fg_store(e, v)`: writes one element anywhere in the output.
    fn store_fn(&self) -> String;
    /// An elementwise entry calling `fg_value(e)` for every output element;
    /// returns (source, workgroup size, dispatch).
    fn elementwise_entry(&self, name: &str, numel: usize) -> (String, [u32; 3], [u32; 3]);
    /// Dispatch for one workgroup per row, and the grid's x extent.
    fn row_dispatch(&self, rows: usize) -> ([u32; 3], u64);
    fn reduce_template(&self) -> &'static str;
    /// Whether the reduce template has the `_serial` sections (one thread
    /// per short row).
    fn serial_short_rows(&self) -> bool {
        false
    }
    /// Whether row reductions with accumulators of `acc` fold across the
    /// hardware's subgroups (WGSL, where the adapter has them) instead of a
    /// tree in workgroup memory (template section `stage_subgroup`).
    fn subgroup_reduce(&self, _acc: DType) -> bool {
        false
    }
    /// Row elements per thread a row reduction may keep in registers for
    /// each load its passes share (template sections `fold`, `fold_cached`,
    /// `cache_row` and `out_full_cached`); 0: the template has none.
    fn row_cache_items(&self) -> usize {
        0
    }
    /// The subgroup-wide fold of `v` for `op` (WGSL's `stage_subgroup`).
    fn subgroup_combine(&self, _op: ReduceOp, _acc: DType, _v: &str) -> String {
        String::new()
    }
    /// Extra entry-point parameters the reduce template's main takes.
    fn subgroup_params(&self) -> String {
        String::new()
    }
    fn matmul_template(&self) -> &'static str;
    /// Output rows and columns one matmul workgroup computes (the template's tile).
    fn matmul_tile(&self) -> u64 {
        64
    }
    /// Statements every entry point starts with: WGSL references every
    /// binding (its automatic layouts drop unused ones); CUDA waits for the
    /// kernel it depends on (see `cuda.rs`).
    fn prologue(&self) -> String;
    /// CUDA kernel parameter list / buffer arguments for calls.
    fn params(&self) -> String;
    fn bufs(&self) -> String;
    fn words(&self, d: DType, len: usize) -> usize;
    fn packed(&self, d: DType) -> bool;
    /// The complete source: prelude, bindings, helpers, functions, entry.
    fn assemble(&self, name: &str, kind: &str, helpers: &str, funcs: &str, entry: &str) -> String;
}

/// The dtype a value of `d` computes as, up to the compute type's name.
fn class(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 | DType::F32 => DType::F32,
        other => other,
    }
}

/// Suffix of float helpers for a float compute class.
fn fsuf(d: DType) -> &'static str {
    if class(d) == DType::F64 {
        "f64"
    } else {
        "f32"
    }
}

/// Helpers a helper calls, so they are emitted first.
pub(crate) fn helper_deps(name: &str) -> Vec<String> {
    let (base, suf) = match name.rsplit_once('_') {
        Some((b, s)) if s == "f32" || s == "f64" => (b, s),
        _ => (name, ""),
    };
    let with = |b: &str| format!("{b}_{suf}");
    match base {
        "fg_max" | "fg_min" | "fg_pow" => vec![with("fg_isnan"), with("fg_from_bits")],
        "fg_relu" | "fg_tanh" | "fg_f2i" | "fg_f2u8" | "fg_argbetter" => vec![with("fg_isnan")],
        "fg_gelu" => vec![with("fg_erf")],
        "fg_gelu_tanh" => vec![with("fg_tanh")],
        "fg_round_bf16" => vec!["fg_bf16_bits".into()],
        "fg_sin" | "fg_cos" => vec!["fg_trig_reduce".into()],
        "fg_trig_reduce" => vec!["fg_mulwide".into()],
        "fg_uniform" => vec!["fg_pcg_hash".into()],
        "fg_normal" => vec!["fg_uniform".into()],
        _ => vec![],
    }
}

fn internal(message: String) -> Error {
    Error::Backend {
        op: "render",
        message,
    }
}

fn invalid(what: &'static str, expected: &'static str, got: String) -> Error {
    Error::InvalidArgument {
        op: "render",
        what,
        expected,
        got,
    }
}

/// Row-major strides of `dims`.
fn contiguous(dims: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1] as i64;
    }
    s
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// Fills `{{KEY}}` placeholders; a placeholder left over is a renderer bug.
pub(crate) fn fill(text: &str, pairs: &[(&str, String)]) -> Result<String> {
    let mut s = text.to_string();
    for (k, v) in pairs {
        s = s.replace(&format!("{{{{{k}}}}}"), v);
    }
    if let Some(p) = s.find("{{") {
        let end = s[p..].find("}}").map_or(s.len(), |e| p + e + 2);
        return Err(internal(format!(
            "template placeholder {} was not filled",
            &s[p..end]
        )));
    }
    Ok(s)
}

/// The text of section `name` of a template (sections start at `//@@ name`).
pub(crate) fn section<'t>(tpl: &'t str, name: &str) -> Result<&'t str> {
    let marker = format!("//@@ {name}\n");
    let start = tpl
        .find(&marker)
        .ok_or_else(|| internal(format!("template section {name} is missing")))?
        + marker.len();
    let end = tpl[start..].find("//@@ ").map_or(tpl.len(), |e| start + e);
    Ok(&tpl[start..end])
}

/// Where expression nodes find their inputs in the current function.
struct Env<'a> {
    /// One name (of the index type) per domain axis; unused axes may be unnamed.
    coords: &'a [String],
    dims: &'a [usize],
    /// Linear index of the domain position (index type), for `Rand`.
    lin: &'a str,
    /// Finished stages: variable name and the dtype it holds.
    stages: &'a [(String, DType)],
    /// The matmul accumulator and its compute dtype.
    acc: Option<(&'a str, DType)>,
    /// Loads whose values a row reduction keeps in registers: the node and
    /// the parameter that holds its value (see `row_cache`).
    cached: &'a [(ExprId, String)],
}

struct Renderer<'l, L: Lang> {
    l: &'l L,
    helper_names: Vec<String>,
    helpers: String,
    funcs: String,
    /// Storage dtype of every argument.
    args: Vec<DType>,
}

fn v(i: ExprId) -> String {
    format!("v{i}")
}

impl<'l, L: Lang> Renderer<'l, L> {
    fn need(&mut self, name: &str) -> Result<()> {
        if self.helper_names.iter().any(|n| n == name) {
            return Ok(());
        }
        for d in helper_deps(name) {
            self.need(&d)?;
        }
        let src = self
            .l
            .helper_src(name)
            .ok_or_else(|| internal(format!("{:?} has no helper {name}", self.l.dialect())))?;
        self.helper_names.push(name.to_string());
        self.helpers.push_str(&src);
        self.helpers.push('\n');
        Ok(())
    }

    fn call_helper(&mut self, name: &str, args: &[&str]) -> Result<String> {
        self.need(name)?;
        Ok(format!("{name}({})", args.join(", ")))
    }

    fn line(&self, out: &mut String, indent: usize, s: &str) {
        for _ in 0..indent {
            out.push_str("    ");
        }
        out.push_str(s);
        out.push('\n');
    }

    // ---------------------------------------------------------------- literals

    fn lit_float(&mut self, x: f64, d: DType) -> Result<String> {
        if x.is_finite() {
            return Ok(self.l.lit_float(x, d));
        }
        if class(d) == DType::F64 {
            let bits = self.l.lit_u64(x.to_bits());
            self.call_helper("fg_from_bits_f64", &[&bits])
        } else {
            let bits = self.l.lit_u32((x as f32).to_bits());
            self.call_helper("fg_from_bits_f32", &[&bits])
        }
    }

    /// `x` as a constant in the compute type of `d`.
    fn lit(&mut self, x: f64, d: DType) -> Result<String> {
        Ok(match d {
            DType::Bool => (x != 0.0).to_string(),
            DType::U8 | DType::I32 => self.l.lit_i32(d.round_f64(x) as i64),
            _ => self.lit_float(d.round_f64(x), d)?,
        })
    }

    fn scalar(&mut self, s: &Scalar) -> Result<String> {
        self.lit(s.value, s.dtype)
    }

    // ------------------------------------------------------------- conversions

    /// Cast semantics of [`DType::round_f64`] from a value of `from` to `to`.
    fn convert(&mut self, x: &str, from: DType, to: DType) -> Result<String> {
        use DType::*;
        if from == to {
            return Ok(x.to_string());
        }
        Ok(match (from, to) {
            (Bool, _) => {
                let (one, zero) = (self.lit(1.0, to)?, self.lit(0.0, to)?);
                self.l.select(x, &one, &zero)
            }
            (_, Bool) => {
                // `!(x == 0)` rather than `x != 0`: Vulkan's ordered `!=` is false for NaN.
                let zero = self.lit(0.0, from)?;
                format!("(!({x} == {zero}))")
            }
            (I32, U8) => self.l.clamp_int(x, 0, 255),
            (U8, I32) => x.to_string(),
            (U8 | I32, _) => {
                let c = self.l.conv(to, x);
                self.round_to(&c, to)?
            }
            (_, I32) => self.call_helper(&format!("fg_f2i_{}", fsuf(from)), &[x])?,
            (_, U8) => self.call_helper(&format!("fg_f2u8_{}", fsuf(from)), &[x])?,
            _ => {
                let c = if class(from) != class(to) {
                    self.l.conv(to, x)
                } else {
                    x.to_string()
                };
                self.round_to(&c, to)?
            }
        })
    }

    /// Rounds an f32-class value to what `to` holds (f16/bf16); others pass.
    fn round_to(&mut self, x: &str, to: DType) -> Result<String> {
        Ok(match to {
            DType::F16 => self.l.round_f16(x),
            DType::BF16 => self.call_helper("fg_round_bf16", &[x])?,
            _ => x.to_string(),
        })
    }

    // -------------------------------------------------------------- operators

    fn unary(&mut self, op: UnaryOp, x: &str, from: DType, d: DType) -> Result<String> {
        use DType::*;
        if op == UnaryOp::Not {
            let b = self.convert(x, from, Bool)?;
            return self.convert(&format!("(!{b})"), Bool, d);
        }
        if op.needs_float() {
            let cd = if d.is_float() { d } else { F32 };
            let a = self.convert(x, from, cd)?;
            let s = fsuf(cd);
            let c = class(cd);
            let r = match op {
                UnaryOp::Exp => format!("{}({a})", self.l.math("exp", c)),
                UnaryOp::Log => format!("{}({a})", self.l.math("log", c)),
                UnaryOp::Sqrt => format!("{}({a})", self.l.math("sqrt", c)),
                UnaryOp::Rsqrt => format!("{}({a})", self.l.math("rsqrt", c)),
                // WGSL's sin/cos are only accurate near zero: reduce the argument first.
                UnaryOp::Sin if self.l.dialect() == Dialect::Wgsl => {
                    self.call_helper("fg_sin_f32", &[&a])?
                }
                UnaryOp::Cos if self.l.dialect() == Dialect::Wgsl => {
                    self.call_helper("fg_cos_f32", &[&a])?
                }
                UnaryOp::Sin => format!("{}({a})", self.l.math("sin", c)),
                UnaryOp::Cos => format!("{}({a})", self.l.math("cos", c)),
                UnaryOp::Tanh => self.call_helper(&format!("fg_tanh_{s}"), &[&a])?,
                UnaryOp::Sigmoid => self.call_helper(&format!("fg_sigmoid_{s}"), &[&a])?,
                UnaryOp::GeluErf => self.call_helper(&format!("fg_gelu_{s}"), &[&a])?,
                UnaryOp::GeluTanh => self.call_helper(&format!("fg_gelu_tanh_{s}"), &[&a])?,
                UnaryOp::Silu => self.call_helper(&format!("fg_silu_{s}"), &[&a])?,
                _ => return Err(internal(format!("unary {} is not float-only", op.name()))),
            };
            return self.convert(&r, cd, d);
        }
        let a = self.convert(x, from, d)?;
        Ok(match (op, d) {
            (_, Bool) => a,
            (UnaryOp::Neg, I32) => self.l.wrap_int('-', &self.l.lit_i32(0), &a),
            (UnaryOp::Neg, U8) => format!(
                "({} & {})",
                self.l.wrap_int('-', &self.l.lit_i32(0), &a),
                self.l.lit_i32(255)
            ),
            (UnaryOp::Neg, _) => format!("(-{a})"),
            (UnaryOp::Abs, I32) => self.call_helper("fg_abs_i32", &[&a])?,
            (UnaryOp::Abs | UnaryOp::Relu, U8) => a,
            (UnaryOp::Abs, _) => format!("{}({a})", self.l.math("abs", class(d))),
            (UnaryOp::Relu, I32) => {
                let zero = self.l.lit_i32(0);
                self.l.select(&format!("({a} > {zero})"), &a, &zero)
            }
            (UnaryOp::Relu, _) => self.call_helper(&format!("fg_relu_{}", fsuf(d)), &[&a])?,
            _ => return Err(internal(format!("unary {} on {d}", op.name()))),
        })
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        a: &str,
        da: DType,
        b: &str,
        db: DType,
        d: DType,
    ) -> Result<String> {
        use DType::*;
        match op {
            BinaryOp::And | BinaryOp::Or => {
                let (x, y) = (self.convert(a, da, Bool)?, self.convert(b, db, Bool)?);
                let sym = if op == BinaryOp::And { "&&" } else { "||" };
                return self.convert(&format!("({x} {sym} {y})"), Bool, d);
            }
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => {
                let mut od = DType::promote(da, db);
                // Booleans only compare for equality in WGSL; order them as 0/1.
                if od == Bool && !matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
                    od = I32;
                }
                let (x, y) = (self.convert(a, da, od)?, self.convert(b, db, od)?);
                if op == BinaryOp::Ne {
                    // NaN is unequal to everything; Vulkan's ordered `!=` says otherwise.
                    return self.convert(&format!("(!({x} == {y}))"), Bool, d);
                }
                let sym = match op {
                    BinaryOp::Eq => "==",
                    BinaryOp::Lt => "<",
                    BinaryOp::Le => "<=",
                    BinaryOp::Gt => ">",
                    _ => ">=",
                };
                return self.convert(&format!("({x} {sym} {y})"), Bool, d);
            }
            _ => {}
        }
        // Arithmetic on bool is integer arithmetic on 0/1, then "non-zero".
        if d == Bool {
            let r = self.binary(op, a, da, b, db, I32)?;
            return self.convert(&r, I32, Bool);
        }
        let (x, y) = (self.convert(a, da, d)?, self.convert(b, db, d)?);
        let (x, y) = (x.as_str(), y.as_str());
        if d.is_float() {
            let s = fsuf(d);
            return Ok(match op {
                BinaryOp::Add => format!("({x} + {y})"),
                BinaryOp::Sub => format!("({x} - {y})"),
                BinaryOp::Mul => format!("({x} * {y})"),
                BinaryOp::Div => format!("({x} / {y})"),
                BinaryOp::Pow => self.call_helper(&format!("fg_pow_{s}"), &[x, y])?,
                BinaryOp::Maximum => self.call_helper(&format!("fg_max_{s}"), &[x, y])?,
                _ => self.call_helper(&format!("fg_min_{s}"), &[x, y])?,
            });
        }
        let r = match op {
            BinaryOp::Add => self.l.wrap_int('+', x, y),
            BinaryOp::Sub => self.l.wrap_int('-', x, y),
            BinaryOp::Mul => self.l.wrap_int('*', x, y),
            BinaryOp::Div => self.call_helper("fg_idiv_i32", &[x, y])?,
            BinaryOp::Pow => self.call_helper("fg_ipow_i32", &[x, y])?,
            BinaryOp::Maximum => return Ok(self.l.select(&format!("({x} > {y})"), x, y)),
            _ => return Ok(self.l.select(&format!("({x} < {y})"), x, y)),
        };
        // u8 arithmetic wraps modulo 256 after every op, as eval_int does.
        Ok(if d == U8 && op != BinaryOp::Div {
            format!("({r} & {})", self.l.lit_i32(255))
        } else {
            r
        })
    }

    // ------------------------------------------------------------ index math

    /// `offset + Σ coords[d] * strides[d]` over axes that can move.
    fn affine(&self, offset: i64, coords: &[String], dims: &[usize], strides: &[i64]) -> String {
        let mut s = String::new();
        if offset != 0 {
            s = self.l.lit_ix(offset);
        }
        for d in 0..strides.len() {
            // Axes of size 1 add nothing; axes of size 0 leave the kernel no
            // position to evaluate, and `used_axes` declares no coordinate
            // for either.
            if strides[d] == 0 || dims[d] <= 1 {
                continue;
            }
            let term = if strides[d] == 1 {
                coords[d].clone()
            } else {
                format!("{} * {}", coords[d], self.l.lit_ix(strides[d]))
            };
            s = if s.is_empty() {
                term
            } else {
                format!("{s} + {term}")
            };
        }
        if s.is_empty() {
            self.l.lit_ix(0)
        } else {
            format!("({s})")
        }
    }

    /// Declares `names[d]` = coordinate `d` of `lin` over `dims` (row-major)
    /// for the axes marked in `used`; `lin` is below the product of `dims`.
    fn decompose(
        &self,
        out: &mut String,
        lin: &str,
        dims: &[usize],
        names: &[String],
        used: &[bool],
    ) {
        let st = contiguous(dims);
        // An empty domain has no position to decompose (and its contiguous
        // strides would divide by zero).
        let empty = dims.contains(&0);
        for d in 0..dims.len() {
            if !used[d] {
                continue;
            }
            let val = if dims[d] == 1 || empty {
                self.l.lit_ix(0)
            } else {
                let q = if st[d] == 1 {
                    lin.to_string()
                } else {
                    format!("({lin} / {})", self.l.lit_ix(st[d]))
                };
                let outer: usize = dims[..d].iter().product();
                if outer > 1 {
                    format!("({q} % {})", self.l.lit_ix(dims[d] as i64))
                } else {
                    q
                }
            };
            self.line(out, 1, &self.l.decl(&names[d], self.l.ix(), &val));
        }
    }

    /// Domain axes the nodes reachable from `roots` read. `rand_from_coords`:
    /// the linear index `Rand` uses is rebuilt from every coordinate (row
    /// kernels) rather than known directly (maps, matmul epilogues).
    fn used_axes(e: &Expr, roots: &[ExprId], dims: &[usize], rand_from_coords: bool) -> Vec<bool> {
        let mut used = vec![false; dims.len()];
        for i in e.reachable(roots) {
            match &e.nodes[i] {
                ExprNode::Load { access, .. } => {
                    for d in 0..dims.len() {
                        if access.strides[d] != 0 && dims[d] > 1 {
                            used[d] = true;
                        }
                    }
                }
                ExprNode::Coord(a) => used[*a] = true,
                ExprNode::Rand { .. } if rand_from_coords => {
                    used.iter_mut().for_each(|u| *u = true)
                }
                _ => {}
            }
        }
        used
    }

    fn uses_rand(e: &Expr, roots: &[ExprId]) -> bool {
        e.reachable(roots)
            .into_iter()
            .any(|i| matches!(e.nodes[i], ExprNode::Rand { .. }))
    }

    // ------------------------------------------------------------ expressions

    /// One declaration `v<i>` per node reachable from `roots`.
    fn emit_expr(&mut self, out: &mut String, e: &Expr, roots: &[ExprId], env: &Env) -> Result<()> {
        for i in e.reachable(roots) {
            let d = e.dtypes[i];
            let dt = |j: ExprId| e.dtypes[j];
            if let Some((_, name)) = env.cached.iter().find(|(n, _)| *n == i) {
                self.line(out, 1, &self.l.decl(&v(i), self.l.cty(d), name));
                continue;
            }
            let val = match &e.nodes[i] {
                ExprNode::Load { arg, access } => {
                    let strides: Vec<i64> = access.strides.iter().map(|&s| s as i64).collect();
                    let idx = self.affine(access.offset as i64, env.coords, env.dims, &strides);
                    let ad = self.arg_dtype(*arg)?;
                    let raw = self.l.load(*arg, ad, &idx);
                    self.convert(&raw, ad, d)?
                }
                ExprNode::Const(s) => {
                    let c = self.scalar(s)?;
                    self.convert(&c, s.dtype, d)?
                }
                ExprNode::Unary(op, a) => self.unary(*op, &v(*a), dt(*a), d)?,
                ExprNode::Binary(op, a, b) => {
                    self.binary(*op, &v(*a), dt(*a), &v(*b), dt(*b), d)?
                }
                ExprNode::Where(c, a, b) => {
                    let cond = self.convert(&v(*c), dt(*c), DType::Bool)?;
                    let (x, y) = (
                        self.convert(&v(*a), dt(*a), d)?,
                        self.convert(&v(*b), dt(*b), d)?,
                    );
                    self.l.select(&cond, &x, &y)
                }
                ExprNode::Cast(t, a) => {
                    let c = self.convert(&v(*a), dt(*a), *t)?;
                    self.convert(&c, *t, d)?
                }
                ExprNode::Coord(a) => {
                    let c = self.l.conv(DType::I32, &env.coords[*a]);
                    self.convert(&c, DType::I32, d)?
                }
                ExprNode::Rand { seed, normal } => {
                    let key = self.l.lit_u32(crate::rng::seed_key(*seed));
                    let idx = self.l.to_u32(env.lin);
                    let r = self.call_helper(
                        if *normal { "fg_normal" } else { "fg_uniform" },
                        &[&key, &idx],
                    )?;
                    self.convert(&r, DType::F32, d)?
                }
                ExprNode::StageRef(s) => {
                    let (name, sd) = env.stages.get(*s).ok_or_else(|| {
                        invalid(
                            "stage reference",
                            "a stage finished before this expression",
                            format!("stage {s} of {}", env.stages.len()),
                        )
                    })?;
                    self.convert(name, *sd, d)?
                }
                ExprNode::Acc => {
                    let (name, ad) = env.acc.ok_or_else(|| {
                        invalid(
                            "Acc node",
                            "only in a matmul epilogue",
                            "another kernel kind".into(),
                        )
                    })?;
                    self.convert(name, ad, d)?
                }
            };
            self.line(out, 1, &self.l.decl(&v(i), self.l.cty(d), &val));
        }
        Ok(())
    }

    fn arg_dtype(&self, arg: usize) -> Result<DType> {
        self.args.get(arg).copied().ok_or_else(|| {
            invalid(
                "load argument",
                "an argument of the kernel",
                format!("{arg}"),
            )
        })
    }
}

/// Names `c0..c{n-1}`.
fn coord_names(n: usize) -> Vec<String> {
    (0..n).map(|d| format!("c{d}")).collect()
}

/// Merges adjacent axes of a map whose every access steps through them as
/// one (always true for the contiguous output), so contiguous elementwise
/// kernels index with no division at all. Size-1 axes are dropped.
pub(crate) fn coalesce_map(m: &MapBody) -> MapBody {
    let has_coord = m.expr.nodes.iter().any(|n| matches!(n, ExprNode::Coord(_)));
    if has_coord || m.shape.is_empty() {
        return m.clone();
    }
    let loads: Vec<&crate::layout::Layout> = m
        .expr
        .nodes
        .iter()
        .filter_map(|n| match n {
            ExprNode::Load { access, .. } => Some(access),
            _ => None,
        })
        .collect();
    // groups[g] = axes merged into new axis g (outermost first).
    let keep: Vec<usize> = (0..m.shape.len()).filter(|&d| m.shape[d] != 1).collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &d in &keep {
        if let Some(g) = groups.last_mut() {
            let inner = *g.last().unwrap_or(&d);
            // Axis `inner` (outer side) merges with `d` when stride[inner] == stride[d] * shape[d].
            let ok = loads
                .iter()
                .all(|l| l.strides[inner] == l.strides[d] * m.shape[d] as isize);
            if ok {
                g.push(d);
                continue;
            }
        }
        groups.push(vec![d]);
    }
    let shape: Vec<usize> = groups
        .iter()
        .map(|g| g.iter().map(|&a| m.shape[a]).product())
        .collect();
    let mut expr = m.expr.clone();
    for n in &mut expr.nodes {
        if let ExprNode::Load { access, .. } = n {
            let strides: Vec<isize> = groups
                .iter()
                .map(|g| g.last().map_or(0, |&a| access.strides[a]))
                .collect();
            *access = crate::layout::Layout {
                shape: shape.clone(),
                strides,
                offset: access.offset,
            };
        }
    }
    MapBody {
        shape,
        expr,
        out: m.out,
    }
}

/// Renders `k` with dialect `l`.
pub(crate) fn render_with<L: Lang>(l: &L, k: &Kernel, name: String) -> Result<RenderedKernel> {
    let args: Vec<DType> = k.args.iter().map(|a| a.dtype).collect();
    let mut r = Renderer {
        l,
        helper_names: Vec::new(),
        helpers: String::new(),
        funcs: String::new(),
        args,
    };
    for h in l.io_helpers() {
        r.need(h)?;
    }
    r.funcs.push_str(&l.load_fns());
    let numel = k.out_numel();
    let (entry, wg, dispatch) = match &k.body {
        Body::Map(m) => {
            let m = coalesce_map(m);
            r.map_value_fn(&m, k.out_dtype)?;
            l.elementwise_entry(&name, numel)
        }
        Body::Concat(c) => {
            r.concat_value_fn(c, k.out_dtype)?;
            l.elementwise_entry(&name, numel)
        }
        Body::Index(ix) => {
            r.index_value_fn(ix, k.out_dtype)?;
            l.elementwise_entry(&name, numel)
        }
        Body::Reduce(red) => r.reduce(red, k.out_dtype, &name)?,
        Body::Matmul(mm) => r.matmul(mm, k.out_dtype, &name)?,
        // Only backends with a native convolution are given conv nodes.
        Body::Conv(c) => {
            return Err(Error::Backend {
                op: c.pass.name(),
                message: "a native convolution has no generated kernel".into(),
            })
        }
    };
    let source = l.assemble(&name, k.kind(), &r.helpers, &r.funcs, &entry);
    let mut bindings: Vec<BindingInfo> = k
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| BindingInfo {
            binding: i as u32,
            dtype: a.dtype,
            words: l.words(a.dtype, a.len),
            read_only: true,
            packed: l.packed(a.dtype),
        })
        .collect();
    bindings.push(BindingInfo {
        binding: k.args.len() as u32,
        dtype: k.out_dtype,
        words: l.words(k.out_dtype, numel),
        read_only: false,
        packed: l.packed(k.out_dtype),
    });
    Ok(RenderedKernel {
        name: name.clone(),
        source,
        entry: name,
        workgroup_size: wg,
        dispatch,
        bindings,
    })
}

impl<L: Lang> Renderer<'_, L> {
    fn finish_fn(&mut self, head: String, body: String) {
        self.funcs.push_str(&head);
        self.funcs.push('\n');
        self.funcs.push_str(&body);
        self.funcs.push_str("}\n\n");
    }

    fn ret(&self, out: &mut String, val: &str) {
        self.line(out, 1, &format!("return {val};"));
    }

    fn map_value_fn(&mut self, m: &MapBody, out_dtype: DType) -> Result<()> {
        let names = coord_names(m.shape.len());
        let used = Self::used_axes(&m.expr, &[m.out], &m.shape, false);
        let mut body = String::new();
        self.decompose(&mut body, "e", &m.shape, &names, &used);
        let env = Env {
            coords: &names,
            dims: &m.shape,
            lin: "e",
            stages: &[],
            acc: None,
            cached: &[],
        };
        self.emit_expr(&mut body, &m.expr, &[m.out], &env)?;
        let ret = self.convert(&v(m.out), m.expr.dtypes[m.out], out_dtype)?;
        self.ret(&mut body, &ret);
        self.finish_value_fn(body, out_dtype);
        Ok(())
    }

    /// Closes `fg_value(e)`, the per-element value function the map-like
    /// entry points call.
    fn finish_value_fn(&mut self, body: String, out_dtype: DType) {
        let head = self.l.fn_head(
            "fg_value",
            &[("e".into(), self.l.ix().into())],
            Some(self.l.cty(out_dtype)),
            true,
        );
        self.finish_fn(head, body);
    }

    fn concat_value_fn(&mut self, c: &ConcatBody, out_dtype: DType) -> Result<()> {
        let names = coord_names(c.shape.len());
        let used = vec![true; c.shape.len()];
        let mut body = String::new();
        self.decompose(&mut body, "e", &c.shape, &names, &used);
        let mut start = 0i64;
        for (i, p) in c.parts.iter().enumerate() {
            let len = p.shape[c.axis] as i64;
            let strides: Vec<i64> = p.strides.iter().map(|&s| s as i64).collect();
            // The part sees coordinate `c_axis - start`; fold the shift into the offset.
            let offset = p.offset as i64 - start * strides[c.axis];
            let mut dims = c.shape.clone();
            dims[c.axis] = c.shape[c.axis].max(2);
            let idx = self.affine(offset, &names, &dims, &strides);
            let ad = self.arg_dtype(i)?;
            let raw = self.l.load(i, ad, &idx);
            let val = self.convert(&raw, ad, out_dtype)?;
            start += len;
            if i + 1 < c.parts.len() {
                let cond = format!("{} < {}", names[c.axis], self.l.lit_ix(start));
                self.line(&mut body, 1, &format!("if ({cond}) {{"));
                self.line(&mut body, 2, &format!("return {val};"));
                self.line(&mut body, 1, "}");
            } else {
                self.ret(&mut body, &val);
            }
        }
        if c.parts.is_empty() {
            let zero = self.lit(0.0, out_dtype)?;
            self.ret(&mut body, &zero);
        }
        self.finish_value_fn(body, out_dtype);
        Ok(())
    }

    fn index_value_fn(&mut self, ix: &IndexBody, out_dtype: DType) -> Result<()> {
        let names = coord_names(ix.shape.len());
        let used = vec![true; ix.shape.len()];
        let mut body = String::new();
        self.decompose(&mut body, "e", &ix.shape, &names, &used);
        let idx_addr = if ix.gather {
            let strides: Vec<i64> = ix.idx.strides.iter().map(|&s| s as i64).collect();
            self.affine(ix.idx.offset as i64, &names, &ix.shape, &strides)
        } else {
            let dims = [ix.shape[ix.axis]];
            self.affine(
                ix.idx.offset as i64,
                std::slice::from_ref(&names[ix.axis]),
                &dims,
                &[ix.idx.strides[0] as i64],
            )
        };
        let idt = self.arg_dtype(1)?;
        let raw = self.l.load(1, idt, &idx_addr);
        let raw = self.convert(&raw, idt, DType::I32)?;
        self.line(
            &mut body,
            1,
            &self.l.decl("raw", self.l.cty(DType::I32), &raw),
        );
        // Negative indices count from the end; out-of-range ones clamp (GPU
        // code has no error channel: the backend checks indices before launch).
        let size = ix.src.shape[ix.axis].max(1) as i64;
        let wrapped = self.l.select(
            &format!("raw < {}", self.l.lit_i32(0)),
            &self.l.wrap_int('+', "raw", &self.l.lit_i32(size)),
            "raw",
        );
        self.line(
            &mut body,
            1,
            &self.l.decl("raw_w", self.l.cty(DType::I32), &wrapped),
        );
        let k = self.l.conv_ix(&self.l.clamp_int("raw_w", 0, size - 1));
        self.line(&mut body, 1, &self.l.decl("k", self.l.ix(), &k));
        let mut coords = names.clone();
        coords[ix.axis] = "k".into();
        let strides: Vec<i64> = ix.src.strides.iter().map(|&s| s as i64).collect();
        let mut dims = ix.src.shape.clone();
        dims[ix.axis] = dims[ix.axis].max(2);
        for (d, dim) in dims.iter_mut().enumerate() {
            if d != ix.axis {
                *dim = ix.shape[d];
            }
        }
        let addr = self.affine(ix.src.offset as i64, &coords, &dims, &strides);
        let sd = self.arg_dtype(0)?;
        let val = self.l.load(0, sd, &addr);
        let val = self.convert(&val, sd, out_dtype)?;
        self.ret(&mut body, &val);
        self.finish_value_fn(body, out_dtype);
        Ok(())
    }

    // ------------------------------------------------------------- reduction

    fn identity(&mut self, op: ReduceOp, d: DType) -> Result<String> {
        Ok(match (op, d) {
            (ReduceOp::Sum, _) => self.lit(0.0, d)?,
            (ReduceOp::Max | ReduceOp::ArgMax, DType::I32) => self.l.lit_i32(i32::MIN as i64),
            (ReduceOp::Min, DType::I32) => self.l.lit_i32(i32::MAX as i64),
            (ReduceOp::Max | ReduceOp::ArgMax, DType::U8) => self.l.lit_i32(0),
            (ReduceOp::Min, DType::U8) => self.l.lit_i32(255),
            (ReduceOp::Max | ReduceOp::ArgMax, _) => self.lit_float(f64::NEG_INFINITY, d)?,
            (ReduceOp::Min, _) => self.lit_float(f64::INFINITY, d)?,
        })
    }

    fn reduce(
        &mut self,
        red: &ReduceBody,
        out_dtype: DType,
        name: &str,
    ) -> Result<(String, [u32; 3], [u32; 3])> {
        let rank = red.shape.len();
        let names = coord_names(rank);
        let kept: Vec<usize> = (0..rank).filter(|a| !red.axes.contains(a)).collect();
        let kept_dims: Vec<usize> = kept.iter().map(|&a| red.shape[a]).collect();
        let red_dims: Vec<usize> = red.axes.iter().map(|&a| red.shape[a]).collect();
        let rows: usize = kept_dims.iter().product();
        let row_len: usize = red_dims.iter().product();
        let full_strides = contiguous(&red.shape);
        let ix = self.l.ix().to_string();

        // (dtype the stage accumulates/compares in, dtype its result holds).
        let mut stage_types: Vec<(DType, DType)> = Vec::new();
        for s in &red.stages {
            let vd = red.expr.dtypes[s.value];
            let acc = match (s.op, class(vd)) {
                // u8 sums accumulate wide and saturate when stored, as the CPU
                // reference does; bool stages fold as 0/1 integers.
                (_, DType::Bool) | (ReduceOp::ArgMax | ReduceOp::Sum, DType::U8) => DType::I32,
                (ReduceOp::ArgMax, c) => c,
                _ => vd,
            };
            let res = if s.op == ReduceOp::ArgMax {
                DType::I32
            } else {
                acc
            };
            stage_types.push((acc, res));
        }
        let stage_env: Vec<(String, DType)> = stage_types
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("st{i}"), t.1))
            .collect();

        // Body prefix shared by stage and write functions: coordinates of (row, r).
        let prefix = |this: &Self, roots: &[ExprId], all: bool| -> (String, bool) {
            let mut used = Self::used_axes(&red.expr, roots, &red.shape, true);
            if all {
                used.iter_mut().for_each(|u| *u = true);
            }
            let mut body = String::new();
            let ku: Vec<bool> = kept.iter().map(|&a| used[a]).collect();
            let kn: Vec<String> = kept.iter().map(|&a| names[a].clone()).collect();
            this.decompose(&mut body, "row", &kept_dims, &kn, &ku);
            let ru: Vec<bool> = red.axes.iter().map(|&a| used[a]).collect();
            let rn: Vec<String> = red.axes.iter().map(|&a| names[a].clone()).collect();
            this.decompose(&mut body, "r", &red_dims, &rn, &ru);
            let rand = Self::uses_rand(&red.expr, roots);
            if rand || all {
                let lin = this.affine(0, &names, &red.shape, &full_strides);
                this.line(&mut body, 1, &this.l.decl("lin", this.l.ix(), &lin));
            }
            (body, rand || all)
        };

        // Rows of a few elements (a sum over a 3x3 window, a small last
        // axis) get one thread each, and so do many columns (see
        // `reads_columns`); other rows a workgroup each: a power of two
        // covering the row, at most 256.
        let serial = self.l.serial_short_rows()
            && (row_len <= SERIAL_ROW_LEN || (rows >= SERIAL_MIN_COLUMNS && reads_columns(red)))
            && red.stages.iter().all(|s| s.op != ReduceOp::ArgMax);
        let sec = |name: &str| {
            if serial {
                format!("{name}_serial")
            } else {
                name.to_string()
            }
        };
        let wg = if serial {
            MAP_WG
        } else {
            (row_len.next_power_of_two()).clamp(32, 256) as u32
        };
        // Loads that several passes read stay in registers (`row_cache`).
        // wasm builds leave the planning out (it counts against their size
        // budget): a browser's WebGPU keeps its index checks on private
        // arrays, whose clamps would likely keep the row out of registers
        // (not measured; see `backend/wgpu/pipelines.rs`).
        let folds = self.l.row_cache_items() > 0 && !serial;
        let plans = folds && !cfg!(target_arch = "wasm32");
        let cache = if plans && red.stages.iter().all(|s| s.op != ReduceOp::ArgMax) {
            row_cache::plan(red, row_len, wg as usize, self.l.row_cache_items())
        } else {
            None
        };
        let cached: Vec<(ExprId, String)> = cache
            .iter()
            .flat_map(|c| c.loads.iter().enumerate())
            .map(|(j, &n)| (n, format!("fg_c{j}")))
            .collect();
        let cached_params: Vec<(String, String)> = cached
            .iter()
            .map(|(n, name)| (name.clone(), self.l.cty(red.expr.dtypes[*n]).to_string()))
            .collect();
        let cached_args: Vec<String> = cached
            .iter()
            .map(|(_, name)| format!("{name}[i]"))
            .collect();

        // One function per cached load: its value at (row, r).
        for (n, name) in &cached {
            let (mut body, _) = prefix(self, &[*n], false);
            let env = Env {
                coords: &names,
                dims: &red.shape,
                lin: "lin",
                stages: &[],
                acc: None,
                cached: &[],
            };
            self.emit_expr(&mut body, &red.expr, &[*n], &env)?;
            self.ret(&mut body, &v(*n));
            let params = [
                ("row".to_string(), ix.clone()),
                ("r".to_string(), ix.clone()),
            ];
            let ty = self.l.cty(red.expr.dtypes[*n]);
            let head = self
                .l
                .fn_head(&format!("fg_load_{name}"), &params, Some(ty), true);
            self.finish_fn(head, body);
        }

        for (s, st) in red.stages.iter().enumerate() {
            let (mut body, _) = prefix(self, &[st.value], false);
            let env = Env {
                coords: &names,
                dims: &red.shape,
                lin: "lin",
                stages: &stage_env[..s],
                acc: None,
                cached: &cached,
            };
            self.emit_expr(&mut body, &red.expr, &[st.value], &env)?;
            let ret = self.convert(&v(st.value), red.expr.dtypes[st.value], stage_types[s].0)?;
            self.ret(&mut body, &ret);
            let mut params = vec![
                ("row".to_string(), ix.clone()),
                ("r".to_string(), ix.clone()),
            ];
            params.extend(
                stage_env[..s]
                    .iter()
                    .map(|(n, d)| (n.clone(), self.l.cty(*d).to_string())),
            );
            params.extend(cached_params.iter().cloned());
            let head = self.l.fn_head(
                &format!("fg_stage{s}"),
                &params,
                Some(self.l.cty(stage_types[s].0)),
                true,
            );
            self.finish_fn(head, body);
        }

        // The write function evaluates `out` and stores it. An output per
        // row is written once, outside the loops, so it reads no registers.
        let write_cached: &[(ExprId, String)] = if red.out_full { &cached } else { &[] };
        {
            let (mut body, _) = prefix(self, &[red.out], red.out_full);
            let env = Env {
                coords: &names,
                dims: &red.shape,
                lin: "lin",
                stages: &stage_env,
                acc: None,
                cached: write_cached,
            };
            self.emit_expr(&mut body, &red.expr, &[red.out], &env)?;
            let val = self.convert(&v(red.out), red.expr.dtypes[red.out], out_dtype)?;
            let idx = if red.out_full {
                "lin".to_string()
            } else {
                "row".to_string()
            };
            self.line(
                &mut body,
                1,
                &format!("{};", self.l.call("fg_store", &[idx, val], true)),
            );
            let mut params = vec![
                ("row".to_string(), ix.clone()),
                ("r".to_string(), ix.clone()),
            ];
            params.extend(
                stage_env
                    .iter()
                    .map(|(n, d)| (n.clone(), self.l.cty(*d).to_string())),
            );
            params.extend(cached_params[..write_cached.len()].iter().cloned());
            let head = self.l.fn_head("fg_write", &params, None, true);
            self.funcs.push_str(&self.l.store_fn());
            self.funcs.push('\n');
            self.finish_fn(head, body);
        }

        let tpl = self.l.reduce_template();
        let items = cache.as_ref().map_or(0, |c| c.items);
        let guard = match &cache {
            Some(c) if c.guarded => format!("if (r < {row_len}) "),
            _ => String::new(),
        };
        let loop_pairs = [
            ("ITEMS", items.to_string()),
            ("GUARD", guard.clone()),
            ("WG", wg.to_string()),
            ("ROW_LEN", row_len.to_string()),
        ];
        let mut shared = String::new();
        let mut stages = String::new();
        for (j, (n, name)) in cached.iter().enumerate() {
            let load = self.l.call(
                &format!("fg_load_{name}"),
                &["row".to_string(), "r".to_string()],
                true,
            );
            let mut pairs = loop_pairs.to_vec();
            pairs.push(("J", j.to_string()));
            pairs.push(("T", self.l.cty(red.expr.dtypes[*n]).to_string()));
            pairs.push(("LOAD", load));
            stages.push_str(&fill(section(tpl, "cache_row")?, &pairs)?);
        }
        for (s, st) in red.stages.iter().enumerate() {
            let (acc_t, _) = stage_types[s];
            let t = self.l.cty(acc_t).to_string();
            let ident = self.identity(st.op, acc_t)?;
            let mut call_args = vec!["row".to_string(), "r".to_string()];
            call_args.extend((0..s).map(|j| format!("st{j}")));
            call_args.extend(cached_args.iter().cloned());
            let value = self.l.call(&format!("fg_stage{s}"), &call_args, true);
            let mut pairs = vec![
                ("S", s.to_string()),
                ("T", t),
                ("HALF", (wg / 2).to_string()),
                ("IDENT", ident),
                ("VALUE", value),
            ];
            pairs.extend(loop_pairs.iter().cloned());
            if st.op == ReduceOp::ArgMax {
                let better = format!(
                    "fg_argbetter_{}",
                    if acc_t == DType::I32 {
                        "i32"
                    } else {
                        fsuf(acc_t)
                    }
                );
                self.need(&better)?;
                pairs.push(("BETTER", better));
                shared.push_str(&fill(section(tpl, "shared_argmax")?, &pairs)?);
                stages.push_str(&fill(section(tpl, "stage_argmax")?, &pairs)?);
            } else {
                let op = match (st.op, acc_t) {
                    (ReduceOp::Sum, _) => BinaryOp::Add,
                    (ReduceOp::Max, _) => BinaryOp::Maximum,
                    _ => BinaryOp::Minimum,
                };
                let combine_acc = self.binary(op, &format!("acc{s}"), acc_t, "v", acc_t, acc_t)?;
                let combine_tree = self.binary(
                    op,
                    &format!("fg_sh{s}[lid]"),
                    acc_t,
                    &format!("fg_sh{s}[lid + s]"),
                    acc_t,
                    acc_t,
                )?;
                pairs.push(("COMBINE_ACC", combine_acc));
                pairs.push(("COMBINE_TREE", combine_tree));
                if !serial {
                    shared.push_str(&fill(section(tpl, "shared")?, &pairs)?);
                }
                if folds {
                    // The template's stage folds with `fold` or `fold_cached`.
                    let fold = if cache.is_some() {
                        "fold_cached"
                    } else {
                        "fold"
                    };
                    let text = fill(section(tpl, fold)?, &pairs)?;
                    pairs.push(("FOLD", text));
                }
                let stage = if !serial && self.l.subgroup_reduce(acc_t) {
                    let v = format!("acc{s}");
                    pairs.push(("SG_COMBINE", self.l.subgroup_combine(st.op, acc_t, &v)));
                    "stage_subgroup".to_string()
                } else {
                    sec("stage")
                };
                stages.push_str(&fill(section(tpl, &stage)?, &pairs)?);
            }
        }
        let mut write_args = vec![
            "row".to_string(),
            if red.out_full {
                "r".to_string()
            } else {
                self.l.lit_ix(0)
            },
        ];
        write_args.extend((0..red.stages.len()).map(|j| format!("st{j}")));
        write_args.extend(cached_args[..write_cached.len()].iter().cloned());
        let write = self.l.call("fg_write", &write_args, true);
        let out_sec = if red.out_full && cache.is_some() {
            "out_full_cached".to_string()
        } else {
            sec(if red.out_full { "out_full" } else { "out_row" })
        };
        let mut out_pairs = loop_pairs.to_vec();
        out_pairs.push(("WRITE", write));
        let output = fill(section(tpl, &out_sec)?, &out_pairs)?;
        let groups = if serial {
            rows.div_ceil(wg as usize)
        } else {
            rows
        };
        let (dispatch, grid_x) = self.l.row_dispatch(groups);
        let entry = fill(
            section(tpl, &sec("main"))?,
            &[
                ("NAME", name.to_string()),
                ("WG", wg.to_string()),
                ("ROWS", rows.to_string()),
                ("GRID_X", grid_x.to_string()),
                ("SHARED", shared),
                ("STAGES", stages),
                ("OUTPUT", output),
                ("PROLOGUE", self.l.prologue()),
                ("PARAMS", self.l.params()),
                ("SG_PARAMS", self.l.subgroup_params()),
            ],
        )?;
        Ok((entry, [wg, 1, 1], dispatch))
    }

    // ----------------------------------------------------------------- matmul

    fn matmul(
        &mut self,
        mm: &MatmulBody,
        out_dtype: DType,
        name: &str,
    ) -> Result<(String, [u32; 3], [u32; 3])> {
        let acc = match class(mm.acc_dtype) {
            DType::F64 => DType::F64,
            DType::F32 => DType::F32,
            _ => DType::I32,
        };
        let acc_t = self.l.cty(acc).to_string();
        let ix = self.l.ix().to_string();
        let nb = mm.batch.len();
        let batch: usize = mm.batch.iter().product();
        let (m, n, kd) = (mm.m as i64, mm.n as i64, mm.k as i64);
        let bnames: Vec<String> = (0..nb).map(|d| format!("bc{d}")).collect();
        let zero = self.lit(0.0, acc)?;

        for (which, lay, arg) in [("a", &mm.a, 0usize), ("b", &mm.b, 1usize)] {
            // Base offset of one batch.
            let mut body = String::new();
            let strides: Vec<i64> = lay.strides.iter().map(|&s| s as i64).collect();
            let used: Vec<bool> = (0..nb)
                .map(|d| strides[d] != 0 && mm.batch[d] > 1)
                .collect();
            self.decompose(&mut body, "b", &mm.batch, &bnames, &used);
            let base = self.affine(lay.offset as i64, &bnames, &mm.batch, &strides[..nb]);
            self.ret(&mut body, &base);
            let head = self.l.fn_head(
                &format!("fg_base_{which}"),
                &[("b".into(), ix.clone())],
                Some(&ix),
                false,
            );
            self.finish_fn(head, body);

            // One element of the tile, zero outside the matrix.
            let (rows, cols, rn, cn) = if which == "a" {
                (m, kd, "i", "kk")
            } else {
                (kd, n, "kk", "j")
            };
            let mut body = String::new();
            let cond = format!(
                "{rn} >= {} || {cn} >= {}",
                self.l.lit_ix(rows),
                self.l.lit_ix(cols)
            );
            self.line(&mut body, 1, &format!("if ({cond}) {{"));
            self.line(&mut body, 2, &format!("return {zero};"));
            self.line(&mut body, 1, "}");
            let (sr, sc) = (strides[nb], strides[nb + 1]);
            let idx = format!(
                "base + {rn} * {} + {cn} * {}",
                self.l.lit_ix(sr),
                self.l.lit_ix(sc)
            );
            let ad = self.arg_dtype(arg)?;
            let raw = self.l.load(arg, ad, &format!("({idx})"));
            let val = self.convert(&raw, ad, acc)?;
            self.ret(&mut body, &val);
            let params = [
                ("base".to_string(), ix.clone()),
                (rn.to_string(), ix.clone()),
                (cn.to_string(), ix.clone()),
            ];
            let head = self
                .l
                .fn_head(&format!("fg_load_{which}"), &params, Some(&acc_t), true);
            self.finish_fn(head, body);
        }

        // Multiply-accumulate: fused for floats, wrapping for ints.
        let mut body = String::new();
        let mac = if acc == DType::I32 {
            self.l.wrap_int('+', "acc", &self.l.wrap_int('*', "x", "y"))
        } else {
            format!("{}(x, y, acc)", self.l.math("fma", acc))
        };
        self.ret(&mut body, &mac);
        let params = [
            ("acc".to_string(), acc_t.clone()),
            ("x".to_string(), acc_t.clone()),
            ("y".to_string(), acc_t.clone()),
        ];
        let head = self.l.fn_head("fg_mac", &params, Some(&acc_t), false);
        self.finish_fn(head, body);

        // Epilogue and store of one output element.
        let out_shape = mm.out_shape();
        let mut names = bnames.clone();
        names.extend(["i".to_string(), "j".to_string()]);
        let mut body = String::new();
        let used = Self::used_axes(&mm.epilogue, &[mm.out], &out_shape, false);
        self.decompose(&mut body, "b", &mm.batch, &bnames, &used[..nb]);
        let lin = format!(
            "b * {} + i * {} + j",
            self.l.lit_ix(m * n),
            self.l.lit_ix(n)
        );
        self.line(&mut body, 1, &self.l.decl("lin", &ix, &lin));
        let env = Env {
            coords: &names,
            dims: &out_shape,
            lin: "lin",
            stages: &[],
            acc: Some(("acc", acc)),
            cached: &[],
        };
        self.emit_expr(&mut body, &mm.epilogue, &[mm.out], &env)?;
        let val = self.convert(&v(mm.out), mm.epilogue.dtypes[mm.out], out_dtype)?;
        self.line(
            &mut body,
            1,
            &format!(
                "{};",
                self.l.call("fg_store", &["lin".to_string(), val], true)
            ),
        );
        let params = [
            ("b".to_string(), ix.clone()),
            ("i".to_string(), ix.clone()),
            ("j".to_string(), ix.clone()),
            ("acc".to_string(), acc_t.clone()),
        ];
        let head = self.l.fn_head("fg_write_mm", &params, None, true);
        self.funcs.push_str(&self.l.store_fn());
        self.funcs.push('\n');
        self.finish_fn(head, body);

        let gz = (batch as u64).min(MAX_GROUPS);
        let tile = self.l.matmul_tile();
        let dispatch = if batch == 0 || mm.m == 0 || mm.n == 0 {
            [0, 1, 1]
        } else {
            [
                ceil_div(mm.n as u64, tile) as u32,
                ceil_div(mm.m as u64, tile) as u32,
                gz as u32,
            ]
        };
        if dispatch[0] as u64 > MAX_GROUPS || dispatch[1] as u64 > MAX_GROUPS {
            return Err(invalid(
                "matmul size",
                "at most 65535 tiles per dimension",
                format!("m = {}, n = {} in tiles of {tile}", mm.m, mm.n),
            ));
        }
        let entry = fill(
            section(self.l.matmul_template(), "main")?,
            &[
                ("NAME", name.to_string()),
                ("ACC", acc_t.clone()),
                ("ZERO", zero),
                ("M", mm.m.to_string()),
                ("N", mm.n.to_string()),
                ("K", mm.k.to_string()),
                ("BATCH", batch.to_string()),
                ("ZSTEP", MAX_GROUPS.to_string()),
                ("PROLOGUE", self.l.prologue()),
                ("PARAMS", self.l.params()),
                ("BUFS", self.l.bufs()),
            ],
        )?;
        Ok((entry, [16, 16, 1], dispatch))
    }
}
