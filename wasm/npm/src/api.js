// The public API of the `fusegraph` package, shared by every entry point
// (entry-node.js, entry-web.js, entry-workerd.js differ only in how they
// find the .wasm file). See index.d.ts for the documented types.

import { raw, build, load, memory } from './wasm.js';
import { FusegraphError, guard, guardAsync, invalid, show } from './errors.js';
import { probeAdapter, probeRelaxedSimd, selectBackend } from './backends.js';
import { checkInto, fromData, readInto, readOut } from './typed.js';
import { image } from './image.js';

export { FusegraphError };

let loaded = null; // the promise of the one wasm instance of this realm
let context = null;

/**
 * Makes `init` for an entry point. `sourceFor(kind)` gives what the
 * wasm-bindgen loader accepts (a URL, bytes, a Response or a compiled
 * Module) for build `kind` ('cpu', 'webgpu' or 'image'), or null when the
 * entry cannot load that build (workerd has no WebGPU). `defaults` are
 * options the entry point sets (`fusegraph/image` sets `image: true`).
 *
 * The first init() of a realm picks the build: the WebGPU one when
 * WebGPU is asked for or 'auto' finds an adapter, else the CPU one. The
 * WebGPU build has the CPU path too, so later init() calls may switch to
 * 'cpu'; after the CPU build, 'webgpu' throws FG_DEVICE_UNAVAILABLE.
 * With `image: true` the same choice is made between the image builds
 * (the same two builds plus the image codecs and ops). In place of the CPU
 * build, `simd: 'auto'` loads the relaxed-SIMD one where the runtime
 * validates relaxed SIMD; `'relaxed'` forces it (FG_DEVICE_UNAVAILABLE
 * without relaxed SIMD), `'simd128'` rules it out.
 */
export function createInit(sourceFor, defaults = {}) {
  return async function init(given = {}) {
    if (given === null || typeof given !== 'object') throw invalid(`init: options must be an object, got ${show(given)}`);
    const options = { ...defaults, ...given };
    const backend = options.backend ?? 'auto';
    if (!['auto', 'cpu', 'webgpu'].includes(backend)) {
      throw invalid(`init: backend must be 'auto', 'cpu' or 'webgpu', got ${show(backend)}`);
    }
    const wantImage = options.image ?? false;
    if (typeof wantImage !== 'boolean') throw invalid(`init: image must be true or false, got ${show(wantImage)}`);
    const simd = options.simd ?? 'auto';
    if (!['auto', 'relaxed', 'simd128'].includes(simd)) {
      throw invalid(`init: simd must be 'auto', 'relaxed' or 'simd128', got ${show(simd)}`);
    }
    if (simd === 'relaxed' && (wantImage || backend === 'webgpu')) {
      throw invalid(
        `init: simd: 'relaxed' is the CPU-only build's, which has no ${wantImage ? 'image codecs' : 'WebGPU backend'} (use simd: 'auto' or 'simd128' with ${wantImage ? 'image: true' : "backend: 'webgpu'"})`,
      );
    }
    // simd: 'relaxed' asks for the CPU-only relaxed build: no adapter probe.
    const probe = backend === 'cpu' || simd === 'relaxed' ? null : await probeAdapter();
    if (!loaded) {
      loaded = loadBuild(probe, backend, simd, options, sourceFor);
      loaded.catch(() => {
        loaded = null; // a failed load (bad path, no network) may be retried
      });
    }
    const note = await loaded;
    if (wantImage && !build.startsWith('image')) {
      throw new FusegraphError(
        'FG_NOT_IN_BUILD',
        `init: image: true, but this realm already loaded the ${build} build, which has no image codecs (the first init() picks the build: make it init({ image: true }) or import from 'fusegraph/image')`,
      );
    }
    if ((simd === 'relaxed') !== (build === 'relaxed') && simd !== 'auto') {
      throw new FusegraphError(
        'FG_NOT_IN_BUILD',
        `init: simd: '${simd}', but this realm already loaded the ${build} build (the first init() picks the build: pass the simd option to it)`,
      );
    }
    const choice = await selectBackend(raw, backend, probe, build, note);
    context = new Fusegraph({ ...choice, simd: build === 'relaxed' ? 'relaxed' : 'simd128' });
    return context;
  };
}

/**
 * Loads the WebGPU build when there is an adapter and the entry has that
 * build, else the CPU build. Resolves to why the WebGPU build was wanted but
 * not loaded (null otherwise). With 'auto', a WebGPU build that fails to
 * load (e.g. a bundle that did not ship it) falls back to the CPU build.
 */
async function loadBuild(probe, backend, simd, options, sourceFor) {
  // The image builds are the core builds plus the codecs; same choice.
  const image = options.image === true;
  const [cpuKind, gpuKind] = image ? ['image', 'image-webgpu'] : ['cpu', 'webgpu'];
  let note = null;
  if (probe?.adapter) {
    const gpuSource = (image ? options.wasmImageWebGpu : options.wasmWebGpu) ?? (await sourceFor(gpuKind));
    if (gpuSource) {
      try {
        await load(gpuKind, gpuSource);
        return null;
      } catch (e) {
        note = `loading the WebGPU build failed (${e?.message ?? e})`;
        if (backend === 'webgpu') throw new FusegraphError('FG_DEVICE_UNAVAILABLE', `init: device webgpu is not available: ${note}`, { cause: e });
      }
    }
  }
  if (!image && simd !== 'simd128') {
    // The relaxed-SIMD CPU build (matmul on f32x4.relaxed_madd), where the
    // runtime validates relaxed SIMD. 'auto' falls back to the SIMD128
    // build when it is missing or fails to load, and keeps to a `wasm`
    // given without a `wasmRelaxed`; 'relaxed' never falls back.
    const supported = probeRelaxedSimd();
    if (simd === 'relaxed' && !supported) {
      throw new FusegraphError('FG_DEVICE_UNAVAILABLE', "init: simd: 'relaxed', but this runtime does not validate relaxed SIMD (WebAssembly.validate of f32x4.relaxed_madd failed)");
    }
    const ownCpuWasm = simd === 'auto' && options.wasm !== undefined && options.wasmRelaxed === undefined;
    const relaxedSource = supported && !ownCpuWasm ? (options.wasmRelaxed ?? (await sourceFor('relaxed'))) : null;
    if (simd === 'relaxed' && !relaxedSource) {
      throw new FusegraphError('FG_NOT_IN_BUILD', "init: simd: 'relaxed', but this entry point has no relaxed-SIMD build");
    }
    if (relaxedSource) {
      try {
        await load('relaxed', relaxedSource);
        return note;
      } catch (e) {
        if (simd === 'relaxed') throw new FusegraphError('FG_DEVICE_UNAVAILABLE', `init: loading the relaxed-SIMD build failed (${e?.message ?? e})`, { cause: e });
      }
    }
  }
  const source = (image ? options.wasmImage : options.wasm) ?? (await sourceFor(cpuKind));
  if (!source) throw new FusegraphError('FG_NOT_IN_BUILD', `init: this entry point has no ${cpuKind} build`);
  await load(cpuKind, source);
  return note;
}

// wasm32 sizes are 32-bit: the bindings take sizes as u32 and axes and
// strides as i32, and wasm-bindgen wraps larger numbers silently (2**32
// would arrive as 0). Every number is checked against its range here.
const MAX_U32 = 0xffff_ffff;
const MAX_I32 = 0x7fff_ffff;

/**
 * A shape: non-negative integer dims whose product fits wasm32's address
 * space (FG_OUT_OF_MEMORY past it, as the core says for its own ops, so a
 * view cannot make a tensor whose size would wrap around).
 */
function checkShape(op, shape) {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw invalid(`${op}: shape must be an array of non-negative integers, got ${show(shape)}`);
  }
  const elements = shape.reduce((p, d) => p * d, 1);
  if (elements > MAX_U32 || shape.some((d) => d > MAX_U32)) {
    throw new FusegraphError('FG_OUT_OF_MEMORY', `${op}: shape ${show(shape)} has more elements than fit in memory (wasm32 addresses at most ${MAX_U32})`);
  }
  return shape;
}

/** An axis: an integer (negative counts from the end); past i32 it is out of range for any rank. */
function checkInt(op, what, v) {
  if (!Number.isSafeInteger(v)) throw invalid(`${op}: ${what} must be an integer, got ${show(v)}`);
  if (v > MAX_I32 || v < -MAX_I32 - 1) {
    throw new FusegraphError('FG_BAD_AXIS', `${op}: ${what} ${v} is out of range for a tensor of any rank`);
  }
  return v;
}

/** A non-negative integer that must fit in a u32 (`tooBig`: the code past it). */
function checkNonNegative(op, what, v, tooBig = 'FG_INVALID_ARGUMENT') {
  if (!Number.isSafeInteger(v) || v < 0) {
    throw invalid(`${op}: ${what} must be a non-negative integer, got ${show(v)}`);
  }
  if (v > MAX_U32) throw new FusegraphError(tooBig, `${op}: ${what} ${v} is out of range (at most ${MAX_U32})`);
  return v;
}

function checkAxes(op, axes) {
  if (axes === undefined || axes === null) return [];
  const list = Array.isArray(axes) ? axes : [axes];
  list.forEach((a) => checkInt(op, 'axis', a));
  return list;
}

/**
 * The dtype name of an options object ('f32' when absent). Only a string may
 * reach the bindings: wasm-bindgen reads any other value's `length` as the
 * string's, and a number or symbol there made it write out of bounds.
 */
function dtypeOf(op, o) {
  const d = o.dtype ?? 'f32';
  if (typeof d !== 'string') throw invalid(`${op}: dtype must be one of f32, f16, bf16, f64, i32, u8, bool, got ${show(d)}`);
  return d;
}

/** An options argument: undefined (defaults) or an object. */
function opts(op, o) {
  if (o === undefined) return {};
  if (o === null || typeof o !== 'object') throw invalid(`${op}: options must be an object, got ${show(o)}`);
  return o;
}

/**
 * Handles cloned for a call that consumes them (null and undefined stay
 * undefined); if one argument is bad, the clones made so far are freed.
 */
function cloneOptional(op, tensors) {
  const out = [];
  try {
    for (const t of tensors) out.push(t === undefined || t === null ? undefined : handle(t).cloneHandle());
  } catch (e) {
    out.forEach((h) => h?.free());
    throw e;
  }
  return out;
}

/** What `init()` resolves to: the chosen backend and the tensor factories. */
class Fusegraph {
  constructor(choice) {
    this.backend = choice.backend;
    this.fallback = choice.fallback;
    this.adapter = choice.adapter ?? null;
    this.simd = choice.simd;
    Object.freeze(this);
  }

  /** Image ops on u8 [H, W, C] tensors (image.js). */
  get image() {
    return image;
  }

  tensor(data, shape, options) {
    const o = opts('tensor', options);
    const dims = checkShape('tensor', shape === undefined ? [data?.length ?? 0] : shape);
    return wrap(() => fromData(raw.WasmTensor, data, dims, o.dtype));
  }

  zeros(shape, options = {}) {
    return this.full(shape, 0, options);
  }

  ones(shape, options = {}) {
    return this.full(shape, 1, options);
  }

  full(shape, value, options) {
    const o = opts('full', options);
    checkShape('full', shape);
    const dtype = dtypeOf('full', o);
    return wrap(() => raw.WasmTensor.full(Number(value), shape, dtype));
  }

  arange(start, end, step = 1, options) {
    const dtype = dtypeOf('arange', opts('arange', options));
    return wrap(() => raw.WasmTensor.arange(start, end, step, dtype));
  }

  rand(shape, options) {
    const o = opts('rand', options);
    checkShape('rand', shape);
    const seed = checkNonNegative('rand', 'seed', o.seed ?? 0);
    const dtype = dtypeOf('rand', o);
    return wrap(() => raw.WasmTensor.rand(shape, seed, dtype));
  }

  randn(shape, options) {
    const o = opts('randn', options);
    checkShape('randn', shape);
    const seed = checkNonNegative('randn', 'seed', o.seed ?? 0);
    const dtype = dtypeOf('randn', o);
    return wrap(() => raw.WasmTensor.randn(shape, seed, dtype));
  }

  where(cond, a, b) {
    return wrap(() => raw.WasmTensor.whereCond(handle(cond), handle(a), handle(b)));
  }

  concat(tensors, axis = 0) {
    if (!Array.isArray(tensors)) throw invalid('concat: expects an array of tensors');
    checkInt('concat', 'axis', axis);
    if (Array.from(tensors).some((t) => t === undefined || t === null)) throw invalid('concat: expects an array of tensors, got a missing entry');
    const handles = cloneOptional('concat', tensors);
    return wrap(() => raw.WasmTensor.concat(handles, axis));
  }

  /** Runs `fn`, then disposes the tensors it created except those it returns. */
  tidy(fn) {
    return tidy(fn);
  }

  /** Tensor handles not yet freed (by `dispose()` or garbage collection). */
  liveTensors() {
    return guard(() => raw.liveHandles());
  }

  /**
   * Bytes of the wasm instance's linear memory. It grows to the largest
   * working set seen and never shrinks (freed memory is reused, not
   * returned), so a figure that keeps rising over repeated work is a leak.
   */
  wasmMemoryBytes() {
    return memory ? memory.buffer.byteLength : 0;
  }
}

// Open tidy() scopes: each collects the tensors created while it runs.
const scopes = [];

function track(t) {
  scopes[scopes.length - 1]?.push(t);
  return t;
}

/**
 * Runs `fn` and disposes every tensor created during it except those it
 * returns (a Tensor, or an array or plain object of them). Intermediate
 * tensors of a chain otherwise live until garbage collection, which does
 * not see the wasm memory they hold.
 */
export function tidy(fn) {
  if (typeof fn !== 'function') throw invalid(`tidy: expects a function, got ${show(fn)}`);
  const scope = [];
  scopes.push(scope);
  let result;
  try {
    result = fn();
  } finally {
    scopes.pop();
    const keep = new Set();
    const collect = (v) => {
      if (v instanceof Tensor) keep.add(v);
      else if (Array.isArray(v)) v.forEach(collect);
      else if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach(collect);
    };
    collect(result);
    for (const t of scope) {
      if (keep.has(t)) track(t); // survives into the enclosing scope
      else t.dispose();
    }
  }
  return result;
}

/** The wasm handle of a Tensor argument (throws for anything else). */
function handle(t) {
  if (!(t instanceof Tensor)) throw invalid(`expected a fusegraph Tensor, got ${show(t)}`);
  return t._handle();
}

function wrap(make) {
  return new Tensor(guard(make));
}

const UNARY = {
  neg: 'neg', abs: 'abs', exp: 'exp', log: 'log', sqrt: 'sqrt', rsqrt: 'rsqrt',
  sin: 'sin', cos: 'cos', tanh: 'tanh', sigmoid: 'sigmoid', relu: 'relu',
  gelu: 'gelu', geluTanh: 'gelu_tanh', silu: 'silu', logicalNot: 'logical_not',
};

const BINARY = {
  add: 'add', sub: 'sub', mul: 'mul', div: 'div', pow: 'pow',
  maximum: 'maximum', minimum: 'minimum', eq: 'eq', ne: 'ne', lt: 'lt',
  le: 'le', gt: 'gt', ge: 'ge', logicalAnd: 'logical_and', logicalOr: 'logical_or',
};

/**
 * A lazy tensor. Ops and views return new tensors without computing;
 * `toArray()` realizes the graph (fused kernels) and reads the values.
 * Memory is freed by `dispose()`, or by garbage collection otherwise.
 */
export class Tensor {
  #h;

  constructor(h) {
    this.#h = h;
    track(this);
  }

  /** @internal */
  _handle() {
    // An object made with Object.create(Tensor.prototype) passes instanceof but has no handle.
    if (!(#h in this)) throw invalid('expected a fusegraph Tensor, got an object that only inherits from Tensor');
    if (!this.#h) throw new FusegraphError('FG_DISPOSED', 'tensor: used after dispose()');
    return this.#h;
  }

  #op(f) {
    const h = this._handle();
    return new Tensor(guard(() => f(h)));
  }

  get shape() {
    return Array.from(guard(() => this._handle().shape()));
  }

  get dtype() {
    return guard(() => this._handle().dtype());
  }

  get size() {
    return guard(() => this._handle().numel());
  }

  get ndim() {
    return this.shape.length;
  }

  get device() {
    return guard(() => this._handle().device());
  }

  get disposed() {
    return #h in this && this.#h === null;
  }

  isContiguous() {
    return guard(() => this._handle().isContiguous());
  }

  /** Frees the tensor's handle now (the data goes once no other tensor needs it). */
  dispose() {
    if (#h in this && this.#h) {
      const h = this.#h;
      this.#h = null;
      guard(() => h.free());
    }
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  matmul(other) {
    const o = handle(other);
    return this.#op((h) => h.matmul(o));
  }

  sum(axes, keepdim = false) {
    const a = checkAxes('sum', axes);
    return this.#op((h) => emptyReduction(h, a, (z) => z.reduce('sum', a, keepdim), false) ?? h.reduce('sum', a, keepdim));
  }

  mean(axes, keepdim = false) {
    const a = checkAxes('mean', axes);
    return this.#op((h) => emptyReduction(h, a, (z) => z.reduce('mean', a, keepdim), true) ?? h.reduce('mean', a, keepdim));
  }

  max(axes, keepdim = false) {
    const a = checkAxes('max', axes);
    return this.#op((h) => h.reduce('max', a, keepdim));
  }

  min(axes, keepdim = false) {
    const a = checkAxes('min', axes);
    return this.#op((h) => h.reduce('min', a, keepdim));
  }

  var(axes, options) {
    const o = opts('var', options);
    const a = checkAxes('var', axes);
    const correction = checkNonNegative('var', 'correction', o.correction ?? 1);
    return this.#op((h) => emptyReduction(h, a, (z) => z.var(a, correction, o.keepdim ?? false), true) ?? h.var(a, correction, o.keepdim ?? false));
  }

  argmax(axis, keepdim = false) {
    const has = axis !== undefined && axis !== null;
    if (has) checkInt('argmax', 'axis', axis);
    return this.#op((h) => h.argmax(has, has ? axis : 0, keepdim));
  }

  softmax(axis = -1) {
    checkInt('softmax', 'axis', axis);
    return this.#op((h) => emptyElementwise(h, (z) => z.softmax(axis)) ?? h.softmax(axis));
  }

  logSoftmax(axis = -1) {
    checkInt('logSoftmax', 'axis', axis);
    return this.#op((h) => emptyElementwise(h, (z) => z.logSoftmax(axis)) ?? h.logSoftmax(axis));
  }

  layerNorm(normalizedDims = 1, options) {
    const o = opts('layerNorm', options);
    checkNonNegative('layerNorm', 'normalizedDims', normalizedDims);
    const eps = o.eps ?? 1e-5;
    if (typeof eps !== 'number' || !Number.isFinite(eps)) throw invalid(`layerNorm: eps must be a finite number, got ${show(eps)}`);
    const h = this._handle();
    // The call consumes the handles it is given: cloned last, after every check.
    const [wh, bh] = cloneOptional('layerNorm', [o.weight, o.bias]);
    let consumed = false;
    const norm = (z) => {
      consumed = true;
      return z.layerNorm(normalizedDims, wh, bh, eps);
    };
    try {
      return new Tensor(guard(() => emptyElementwise(h, norm) ?? norm(h)));
    } finally {
      // An empty input whose stand-in cannot be made (a zero dim beside
      // dims of 2^31) fails before the bindings take the clones.
      if (!consumed) [wh, bh].forEach((c) => c?.free());
    }
  }

  cast(dtype) {
    return this.#op((h) => h.cast(String(dtype)));
  }

  clamp(lo, hi) {
    return this.#op((h) => h.clamp(Number(lo), Number(hi)));
  }

  indexSelect(axis, index) {
    checkInt('indexSelect', 'axis', axis);
    const i = handle(index);
    return this.#op((h) => h.indexSelect(axis, i));
  }

  gather(axis, index) {
    checkInt('gather', 'axis', axis);
    const i = handle(index);
    return this.#op((h) => h.gather(axis, i));
  }

  // Views: layout only, no copy.
  reshape(shape) {
    if (!Array.isArray(shape)) throw invalid('reshape: shape must be an array');
    const dims = inferReshape(shape, this.size);
    return this.#op((h) => h.reshape(dims));
  }

  flatten() {
    return this.#op((h) => h.flatten());
  }

  permute(axes) {
    if (!Array.isArray(axes)) throw invalid(`permute: axes must be an array, got ${show(axes)}`);
    axes.forEach((a) => checkNonNegative('permute', 'axis', a, 'FG_BAD_AXIS'));
    return this.#op((h) => h.permute(axes));
  }

  transpose(a = -2, b = -1) {
    checkInt('transpose', 'axis', a);
    checkInt('transpose', 'axis', b);
    return this.#op((h) => h.transpose(a, b));
  }

  t() {
    return this.#op((h) => h.t());
  }

  narrow(axis, start, length) {
    checkInt('narrow', 'axis', axis);
    checkNonNegative('narrow', 'start', start, 'FG_OUT_OF_RANGE');
    checkNonNegative('narrow', 'length', length, 'FG_OUT_OF_RANGE');
    return this.#op((h) => h.narrow(axis, start, length));
  }

  expand(shape) {
    checkShape('expand', shape);
    return this.#op((h) => h.expand(shape));
  }

  broadcastTo(shape) {
    checkShape('broadcastTo', shape);
    return this.#op((h) => h.broadcastTo(shape));
  }

  squeeze(axis) {
    checkInt('squeeze', 'axis', axis);
    return this.#op((h) => h.squeeze(axis));
  }

  unsqueeze(axis) {
    checkInt('unsqueeze', 'axis', axis);
    return this.#op((h) => h.unsqueeze(axis));
  }

  asStrided(shape, strides, offset = 0) {
    checkShape('asStrided', shape);
    if (!Array.isArray(strides)) throw invalid('asStrided: strides must be an array');
    strides.forEach((s) => {
      if (!Number.isSafeInteger(s)) throw invalid(`asStrided: stride must be an integer, got ${show(s)}`);
      if (s > MAX_I32 || s < -MAX_I32 - 1) throw new FusegraphError('FG_OUT_OF_RANGE', `asStrided: stride ${s} is out of range (a 32-bit integer)`);
    });
    checkNonNegative('asStrided', 'offset', offset, 'FG_OUT_OF_RANGE');
    return this.#op((h) => h.asStrided(shape, strides, offset));
  }

  contiguous() {
    return this.#op((h) => h.contiguous());
  }

  /** Computes the tensor now and keeps the result (returns this tensor). */
  realize() {
    const h = this._handle();
    // Nothing to compute for an empty tensor (see readOut).
    if (guard(() => h.numel()) !== 0) guard(() => h.realize());
    return this;
  }

  /**
   * The values, row-major, as the dtype's typed array: a fresh copy, or
   * written into `into` (the dtype's typed array class with exactly
   * `size` elements), which is returned. On WebGPU this awaits the GPU's
   * copy into a mapped staging buffer; the tensor may be disposed while the
   * read runs.
   */
  async toArray(into) {
    const h = this._handle();
    if (onGpu(h)) {
      // Checked before the GPU work starts (readInto checks on the CPU path).
      if (into !== undefined) guard(() => checkInto(h, into, 'toArray'));
      const values = await guardAsync(() => raw.readAsync(h));
      if (into === undefined) return values;
      into.set(values);
      return into;
    }
    return guard(() => (into === undefined ? readOut(h) : readInto(h, into, 'toArray')));
  }

  /** `toArray(into)` without the promise: CPU tensors only (WebGPU reads back asynchronously). */
  toArraySync(into) {
    const h = this._handle();
    if (onGpu(h)) {
      throw new FusegraphError('FG_BACKEND', 'toArraySync: a tensor on WebGPU is read back asynchronously; use await toArray()');
    }
    return guard(() => (into === undefined ? readOut(h) : readInto(h, into, 'toArraySync')));
  }
}

/**
 * A reduction over axes of size 0 into a non-empty result (sum, mean or var
 * of a [4, 0] tensor over axis 1). The core's CPU reduction panics on these,
 * so the result is made here: the same reduction over zeros of the same
 * dtype with each empty reduced axis of size 1 — 0 for a sum, with the
 * dtype the reduction gives — and NaN added for mean and var (0/0).
 * Returns null when the reduction is not of that kind (or its axes are bad,
 * which the core reports).
 */
function emptyReduction(h, axes, reduce, nan) {
  const shape = Array.from(h.shape());
  const rank = shape.length;
  const norm = (axes.length ? axes : shape.map((_, i) => i)).map((a) => (a < 0 ? a + rank : a));
  if (norm.some((a) => a < 0 || a >= rank) || new Set(norm).size !== norm.length) return null;
  if (!shape.includes(0)) return null;
  const stand = raw.WasmTensor.full(0, shape.map((d) => (d === 0 ? 1 : d)), h.dtype());
  let r;
  try {
    r = reduce(stand);
    if (nan && norm.some((a) => shape[a] === 0)) {
      const n = r.binaryScalar('add', NaN);
      r.free();
      r = n;
    }
  } finally {
    stand.free();
  }
  return emptyAgain(r, shape, norm);
}

/**
 * An op whose result has the input's shape (softmax, layer norm), on an
 * empty input: the core's reductions inside them panic on empty tensors, so
 * it runs on a stand-in (zero dims made 1) and is narrowed back to empty.
 * Null for a non-empty input.
 */
function emptyElementwise(h, op) {
  const shape = Array.from(h.shape());
  if (!shape.includes(0)) return null;
  const stand = raw.WasmTensor.full(0, shape.map((d) => (d === 0 ? 1 : d)), h.dtype());
  try {
    return emptyAgain(op(stand), shape, []);
  } finally {
    stand.free();
  }
}

/**
 * `r`, reduced from a stand-in whose zero dims were made 1, narrowed back to
 * 0 on the axes that were 0 and not reduced (so its shape is the real one).
 */
function emptyAgain(r, shape, reduced) {
  const rShape = Array.from(r.shape());
  const keep = shape.map((_, i) => i).filter((i) => !reduced.includes(i));
  const keptDims = rShape.length === shape.length; // keepdim
  shape.forEach((d, i) => {
    if (d !== 0 || reduced.includes(i)) return;
    const axis = keptDims ? i : keep.indexOf(i);
    const n = r.narrow(axis, 0, 0);
    r.free();
    r = n;
  });
  return r;
}

/** True for a handle on the WebGPU device (only the WebGPU build has `readAsync`). */
function onGpu(h) {
  return typeof raw.readAsync === 'function' && guard(() => h.device()) === 'wgpu';
}

for (const [method, name] of Object.entries(UNARY)) {
  Tensor.prototype[method] = function () {
    return unaryOf(this, name);
  };
}

function unaryOf(t, name) {
  const h = t._handle();
  return new Tensor(guard(() => h.unary(name)));
}

// Elementwise with NumPy broadcasting; a number takes this tensor's dtype.
for (const [method, name] of Object.entries(BINARY)) {
  Tensor.prototype[method] = function (other) {
    if (typeof other === 'number') {
      const h = this._handle();
      return new Tensor(guard(() => h.binaryScalar(name, other)));
    }
    const o = handle(other);
    const h = this._handle();
    return new Tensor(guard(() => h.binary(name, o)));
  };
}

/** Resolves one `-1` in a reshape target, as NumPy does. */
function inferReshape(shape, size) {
  if (!shape.every((d) => Number.isSafeInteger(d) && d >= -1)) {
    throw invalid(`reshape: shape must be an array of non-negative integers (and at most one -1), got ${show(shape)}`);
  }
  const unknown = shape.filter((d) => d === -1).length;
  if (unknown > 1) throw invalid(`reshape: at most one -1 in ${show(shape)}`);
  const known = shape.reduce((p, d) => (d === -1 ? p : p * d), 1);
  const dims = shape.map((d) => (d === -1 ? (known === 0 ? 0 : Math.floor(size / known)) : d));
  return checkShape('reshape', dims);
}

/** The context of the last `init()` (null before). */
export function current() {
  return context;
}
