// The f64 reference the package tests compare with: plain loops over
// row-major arrays, written independently of the library, plus the same
// per-dtype tolerances as the Rust conformance suite (tests/src/lib.rs `Tol`).

import assert from 'node:assert/strict';

export const BASE_TOL = { f64: 1e-12, f32: 1e-5, f16: 2e-3, bf16: 1.6e-2, i32: 0, u8: 0, bool: 0 };

/** Tolerance for `ops` rounding ops, then a reduction over `n` (as `Tol::ops(..).reduce(..)`). */
export function tol(dtype, { ops = 1, reduce = 1 } = {}) {
  return BASE_TOL[dtype] * Math.max(ops, 1) * Math.max(Math.sqrt(reduce) / 4, 1);
}

/** Asserts got ≈ want element by element: |g - w| <= tol * max(|w|, 1); NaN matches NaN. */
export function assertClose(what, got, want, t) {
  assert.equal(got.length, want.length, `${what}: got ${got.length} values, reference has ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const g = Number(got[i]);
    const w = want[i];
    if (Number.isNaN(w) || Number.isNaN(g)) {
      assert.ok(Number.isNaN(w) && Number.isNaN(g), `${what}: element ${i}: got ${g}, reference ${w}`);
      continue;
    }
    if (!Number.isFinite(w) || !Number.isFinite(g)) {
      assert.equal(g, w, `${what}: element ${i}`);
      continue;
    }
    const ok = Math.abs(g - w) <= t * Math.max(Math.abs(w), 1);
    assert.ok(ok, `${what}: element ${i}: got ${g}, reference ${w} (tol ${t})`);
  }
}

export { randomF32 } from './data.js';

export function numel(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function stridesOf(shape) {
  const st = new Array(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

/** Row-major coordinates of flat index i. */
function coords(i, shape) {
  const c = new Array(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    c[d] = i % shape[d];
    i = Math.floor(i / shape[d]);
  }
  return c;
}

export function broadcastShape(a, b) {
  const n = Math.max(a.length, b.length);
  const out = [];
  for (let i = 0; i < n; i++) {
    const x = a[a.length - n + i] ?? 1;
    const y = b[b.length - n + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) throw new Error(`reference: cannot broadcast ${a} with ${b}`);
    out.push(x === 1 ? y : x); // a 1 stretches to the other size, 0 included
  }
  return out;
}

/** Reads `x` (shape `shape`) at broadcast coordinates `c` of a bigger shape. */
function at(x, shape, c) {
  const st = stridesOf(shape);
  const off = c.length - shape.length;
  let idx = 0;
  for (let d = 0; d < shape.length; d++) idx += (shape[d] === 1 ? 0 : c[off + d]) * st[d];
  return x[idx];
}

/** Elementwise f(a, b) with NumPy broadcasting. */
export function zip(a, aShape, b, bShape, f) {
  const shape = broadcastShape(aShape, bShape);
  const out = new Float64Array(numel(shape));
  for (let i = 0; i < out.length; i++) {
    const c = coords(i, shape);
    out[i] = f(at(a, aShape, c), at(b, bShape, c));
  }
  return { data: out, shape };
}

/** Batched matmul with broadcast batch dims; both operands rank >= 2. */
export function matmul(a, aShape, b, bShape) {
  const [m, k] = aShape.slice(-2);
  const [k2, n] = bShape.slice(-2);
  if (k !== k2) throw new Error('reference: inner dims differ');
  const batch = broadcastShape(aShape.slice(0, -2), bShape.slice(0, -2));
  const nb = numel(batch);
  const out = new Float64Array(nb * m * n);
  for (let bi = 0; bi < nb; bi++) {
    const c = coords(bi, batch);
    const aOff = batchOffset(aShape.slice(0, -2), c) * m * k;
    const bOff = batchOffset(bShape.slice(0, -2), c) * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let p = 0; p < k; p++) s += a[aOff + i * k + p] * b[bOff + p * n + j];
        out[bi * m * n + i * n + j] = s;
      }
    }
  }
  return { data: out, shape: [...batch, m, n] };
}

function batchOffset(shape, c) {
  const st = stridesOf(shape);
  const off = c.length - shape.length;
  let idx = 0;
  for (let d = 0; d < shape.length; d++) idx += (shape[d] === 1 ? 0 : c[off + d]) * st[d];
  return idx;
}

/** Reduces over `axes` (all when empty) with keepdim. */
export function reduce(x, shape, axes, keepdim, op) {
  const ax = (axes.length ? axes : shape.map((_, i) => i)).map((a) => (a < 0 ? a + shape.length : a));
  const kept = shape.map((d, i) => (ax.includes(i) ? 1 : d));
  const acc = new Array(numel(kept)).fill(null);
  const count = numel(shape) / numel(kept);
  for (let i = 0; i < x.length; i++) {
    const c = coords(i, shape).map((v, d) => (ax.includes(d) ? 0 : v));
    let o = 0;
    const st = stridesOf(kept);
    for (let d = 0; d < c.length; d++) o += c[d] * st[d];
    const v = x[i];
    const prev = acc[o];
    acc[o] = prev === null ? v : op === 'sum' || op === 'mean' ? prev + v : op === 'max' ? Math.max(prev, v) : Math.min(prev, v);
  }
  const data = Float64Array.from(acc, (v) => (op === 'mean' ? v / count : v));
  const outShape = keepdim ? kept : shape.filter((_, i) => !ax.includes(i));
  return { data, shape: outShape };
}

/** Softmax along the last axis. */
export function softmaxLast(x, shape) {
  const n = shape[shape.length - 1];
  const out = new Float64Array(x.length);
  for (let r = 0; r < x.length / n; r++) {
    let m = -Infinity;
    for (let j = 0; j < n; j++) m = Math.max(m, x[r * n + j]);
    let s = 0;
    for (let j = 0; j < n; j++) s += Math.exp(x[r * n + j] - m);
    for (let j = 0; j < n; j++) out[r * n + j] = Math.exp(x[r * n + j] - m) / s;
  }
  return out;
}

/** Transposes the last two axes of a row-major array. */
export function transposeLast(x, shape) {
  const [r, c] = shape.slice(-2);
  const nb = x.length / (r * c);
  const out = new Float64Array(x.length);
  for (let b = 0; b < nb; b++) {
    for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[b * r * c + j * r + i] = x[b * r * c + i * c + j];
  }
  return { data: out, shape: [...shape.slice(0, -2), c, r] };
}

/** Gathers a strided view: element (c) = x[offset + sum c_d * strides_d]. */
export function strided(x, shape, strides, offset) {
  const out = new Float64Array(numel(shape));
  for (let i = 0; i < out.length; i++) {
    const c = coords(i, shape);
    let idx = offset;
    for (let d = 0; d < c.length; d++) idx += c[d] * strides[d];
    out[i] = x[idx];
  }
  return out;
}

export function erf(x) {
  // Abramowitz–Stegun 7.1.26 is too coarse for 1e-5; use a series / continued fraction.
  const t = Math.abs(x);
  if (t < 2.5) {
    let sum = t;
    let term = t;
    for (let n = 1; n < 60; n++) {
      term *= (-t * t) / n;
      sum += term / (2 * n + 1);
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc continued fraction for large |x|
  let f = 0;
  for (let n = 60; n >= 1; n--) f = n / 2 / (t + f);
  const erfc = Math.exp(-t * t) / Math.sqrt(Math.PI) / (t + f);
  return Math.sign(x) * (1 - erfc);
}
