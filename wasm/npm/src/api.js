// The public API of the `fusegraph` package, shared by every entry point
// (entry-node.js, entry-web.js, entry-workerd.js differ only in how they
// find the .wasm file). See index.d.ts for the documented types.

import { raw, build, load } from './wasm.js';
import { FusegraphError, guard, guardAsync, invalid } from './errors.js';
import { probeAdapter, selectBackend } from './backends.js';
import { fromData, readOut } from './typed.js';
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
 * (the same two builds plus the image codecs and ops).
 */
export function createInit(sourceFor, defaults = {}) {
  return async function init(given = {}) {
    if (given === null || typeof given !== 'object') throw invalid(`init: options must be an object, got ${given === null ? 'null' : typeof given}`);
    const options = { ...defaults, ...given };
    const backend = options.backend ?? 'auto';
    if (!['auto', 'cpu', 'webgpu'].includes(backend)) {
      throw invalid(`init: backend must be 'auto', 'cpu' or 'webgpu', got ${JSON.stringify(backend)}`);
    }
    const wantImage = options.image ?? false;
    if (typeof wantImage !== 'boolean') throw invalid(`init: image must be true or false, got ${JSON.stringify(wantImage)}`);
    const probe = backend === 'cpu' ? null : await probeAdapter();
    if (!loaded) {
      loaded = loadBuild(probe, backend, options, sourceFor);
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
    const choice = await selectBackend(raw, backend, probe, build, note);
    context = new Fusegraph(choice);
    return context;
  };
}

/**
 * Loads the WebGPU build when there is an adapter and the entry has that
 * build, else the CPU build. Resolves to why the WebGPU build was wanted but
 * not loaded (null otherwise). With 'auto', a WebGPU build that fails to
 * load (e.g. a bundle that did not ship it) falls back to the CPU build.
 */
async function loadBuild(probe, backend, options, sourceFor) {
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
  const source = (image ? options.wasmImage : options.wasm) ?? (await sourceFor(cpuKind));
  if (!source) throw new FusegraphError('FG_NOT_IN_BUILD', `init: this entry point has no ${cpuKind} build`);
  await load(cpuKind, source);
  return note;
}

function checkShape(op, shape) {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw invalid(`${op}: shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
  }
  return shape;
}

function checkInt(op, what, v) {
  if (!Number.isSafeInteger(v)) throw invalid(`${op}: ${what} must be an integer, got ${String(v)}`);
  return v;
}

function checkNonNegative(op, what, v) {
  if (!Number.isSafeInteger(v) || v < 0) {
    throw invalid(`${op}: ${what} must be a non-negative integer, got ${String(v)}`);
  }
  return v;
}

function checkAxes(op, axes) {
  if (axes === undefined || axes === null) return [];
  const list = Array.isArray(axes) ? axes : [axes];
  list.forEach((a) => checkInt(op, 'axis', a));
  return list;
}

/** What `init()` resolves to: the chosen backend and the tensor factories. */
class Fusegraph {
  constructor(choice) {
    this.backend = choice.backend;
    this.fallback = choice.fallback;
    this.adapter = choice.adapter ?? null;
    Object.freeze(this);
  }

  /** Image ops on u8 [H, W, C] tensors (image.js). */
  get image() {
    return image;
  }

  tensor(data, shape, options = {}) {
    const dims = shape === undefined ? [data?.length ?? 0] : checkShape('tensor', shape);
    return wrap(() => fromData(raw.WasmTensor, data, dims, options.dtype));
  }

  zeros(shape, options = {}) {
    return this.full(shape, 0, options);
  }

  ones(shape, options = {}) {
    return this.full(shape, 1, options);
  }

  full(shape, value, options = {}) {
    checkShape('full', shape);
    return wrap(() => raw.WasmTensor.full(Number(value), shape, options.dtype ?? 'f32'));
  }

  arange(start, end, step = 1, options = {}) {
    return wrap(() => raw.WasmTensor.arange(start, end, step, options.dtype ?? 'f32'));
  }

  rand(shape, options = {}) {
    checkShape('rand', shape);
    const seed = checkNonNegative('rand', 'seed', options.seed ?? 0);
    return wrap(() => raw.WasmTensor.rand(shape, seed, options.dtype ?? 'f32'));
  }

  randn(shape, options = {}) {
    checkShape('randn', shape);
    const seed = checkNonNegative('randn', 'seed', options.seed ?? 0);
    return wrap(() => raw.WasmTensor.randn(shape, seed, options.dtype ?? 'f32'));
  }

  where(cond, a, b) {
    return wrap(() => raw.WasmTensor.whereCond(handle(cond), handle(a), handle(b)));
  }

  concat(tensors, axis = 0) {
    if (!Array.isArray(tensors)) throw invalid('concat: expects an array of tensors');
    checkInt('concat', 'axis', axis);
    return wrap(() => raw.WasmTensor.concat(tensors.map((t) => handle(t).cloneHandle()), axis));
  }

  /** Runs `fn`, then disposes the tensors it created except those it returns. */
  tidy(fn) {
    return tidy(fn);
  }

  /** Tensor handles not yet freed (by `dispose()` or garbage collection). */
  liveTensors() {
    return guard(() => raw.liveHandles());
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
  if (!(t instanceof Tensor)) throw invalid(`expected a fusegraph Tensor, got ${typeof t}`);
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
    return this.#h === null;
  }

  isContiguous() {
    return guard(() => this._handle().isContiguous());
  }

  /** Frees the tensor's handle now (the data goes once no other tensor needs it). */
  dispose() {
    if (this.#h) {
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
    return this.#op((h) => h.reduce('sum', a, keepdim));
  }

  mean(axes, keepdim = false) {
    const a = checkAxes('mean', axes);
    return this.#op((h) => h.reduce('mean', a, keepdim));
  }

  max(axes, keepdim = false) {
    const a = checkAxes('max', axes);
    return this.#op((h) => h.reduce('max', a, keepdim));
  }

  min(axes, keepdim = false) {
    const a = checkAxes('min', axes);
    return this.#op((h) => h.reduce('min', a, keepdim));
  }

  var(axes, options = {}) {
    const a = checkAxes('var', axes);
    const correction = checkNonNegative('var', 'correction', options.correction ?? 1);
    return this.#op((h) => h.var(a, correction, options.keepdim ?? false));
  }

  argmax(axis, keepdim = false) {
    const has = axis !== undefined && axis !== null;
    if (has) checkInt('argmax', 'axis', axis);
    return this.#op((h) => h.argmax(has, has ? axis : 0, keepdim));
  }

  softmax(axis = -1) {
    checkInt('softmax', 'axis', axis);
    return this.#op((h) => h.softmax(axis));
  }

  logSoftmax(axis = -1) {
    checkInt('logSoftmax', 'axis', axis);
    return this.#op((h) => h.logSoftmax(axis));
  }

  layerNorm(normalizedDims = 1, options = {}) {
    checkNonNegative('layerNorm', 'normalizedDims', normalizedDims);
    const w = options.weight ? handle(options.weight).cloneHandle() : undefined;
    const b = options.bias ? handle(options.bias).cloneHandle() : undefined;
    return this.#op((h) => h.layerNorm(normalizedDims, w, b, options.eps ?? 1e-5));
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
    checkShape('permute', axes);
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
    checkNonNegative('narrow', 'start', start);
    checkNonNegative('narrow', 'length', length);
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
    strides.forEach((s) => checkInt('asStrided', 'stride', s));
    checkNonNegative('asStrided', 'offset', offset);
    return this.#op((h) => h.asStrided(shape, strides, offset));
  }

  contiguous() {
    return this.#op((h) => h.contiguous());
  }

  /** Computes the tensor now and keeps the result (returns this tensor). */
  realize() {
    const h = this._handle();
    guard(() => h.realize());
    return this;
  }

  /**
   * The values, row-major, as the dtype's typed array (a fresh copy). On
   * WebGPU this awaits the GPU's copy into a mapped staging buffer; the
   * tensor may be disposed while the read runs.
   */
  async toArray() {
    const h = this._handle();
    if (onGpu(h)) return guardAsync(() => raw.readAsync(h));
    return guard(() => readOut(h));
  }

  /** `toArray()` without the promise: CPU tensors only (WebGPU reads back asynchronously). */
  toArraySync() {
    const h = this._handle();
    if (onGpu(h)) {
      throw new FusegraphError('FG_BACKEND', 'toArraySync: a tensor on WebGPU is read back asynchronously; use await toArray()');
    }
    return guard(() => readOut(h));
  }
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
  const unknown = shape.filter((d) => d === -1).length;
  if (unknown > 1) throw invalid(`reshape: at most one -1 in ${JSON.stringify(shape)}`);
  const known = shape.reduce((p, d) => (d === -1 ? p : p * d), 1);
  const dims = shape.map((d) => (d === -1 ? (known === 0 ? 0 : Math.floor(size / known)) : d));
  return checkShape('reshape', dims);
}

/** The context of the last `init()` (null before). */
export function current() {
  return context;
}
