// The cases the browser runs on each backend (WebGPU, CPU). This file runs
// in the page, so it builds tensors and reads results only; the Node side
// (chromium.test.js) regenerates the same inputs from the seeds and compares
// with the f64 reference of ../reference.js.

import { randomF32 } from '../data.js';

const numel = (shape) => shape.reduce((a, b) => a * b, 1);

/** Inputs of a case: `[shape, seed, scale]` each, as `{ shape, data }`. */
export function inputsOf(c) {
  return c.inputs.map(([shape, seed, scale = 1]) => ({ shape, data: randomF32(numel(shape), seed, scale) }));
}

export const CASES = [
  {
    name: 'matmul (64, 48) @ (48, 40)',
    inputs: [[[64, 48], 1], [[48, 40], 2]],
    build: (fg, [a, b]) => a.matmul(b),
    reference: (ref, [a, b]) => ({ data: ref.matmul(a.data, a.shape, b.data, b.shape).data, tol: ref.tol('f32', { reduce: 48 }) }),
  },
  {
    name: 'matmul (256, 256) @ (256, 256), the tiled kernel',
    inputs: [[[256, 256], 3], [[256, 256], 4]],
    build: (fg, [a, b]) => a.matmul(b),
    reference: (ref, [a, b]) => ({ data: ref.matmul(a.data, a.shape, b.data, b.shape).data, tol: ref.tol('f32', { reduce: 256 }) }),
  },
  {
    name: 'relu(a @ b.T + bias), a transposed view and a fused epilogue',
    inputs: [[[40, 24], 5], [[30, 24], 6], [[30], 7]],
    build: (fg, [a, b, bias]) => a.matmul(b.t()).add(bias).relu(),
    reference: (ref, [a, b, bias]) => {
      const bt = ref.transposeLast(b.data, b.shape);
      const mm = ref.matmul(a.data, a.shape, bt.data, bt.shape);
      return { data: ref.zip(mm.data, mm.shape, bias.data, bias.shape, (x, y) => Math.max(x + y, 0)).data, tol: ref.tol('f32', { ops: 2, reduce: 24 }) };
    },
  },
  {
    name: 'tanh(a * b + c) with broadcasting (4, 1, 5) (3, 1) (5)',
    inputs: [[[4, 1, 5], 8], [[3, 1], 9], [[5], 10]],
    build: (fg, [a, b, c]) => a.mul(b).add(c).tanh(),
    reference: (ref, [a, b, c]) => {
      const ab = ref.zip(a.data, a.shape, b.data, b.shape, (x, y) => x * y);
      return { data: ref.zip(ab.data, ab.shape, c.data, c.shape, (x, y) => Math.tanh(x + y)).data, tol: ref.tol('f32', { ops: 3 }) };
    },
  },
  {
    name: 'sum over the last axis of (37, 300)',
    inputs: [[[37, 300], 11]],
    build: (fg, [x]) => x.sum(-1),
    reference: (ref, [x]) => ({ data: ref.reduce(x.data, x.shape, [-1], false, 'sum').data, tol: ref.tol('f32', { reduce: 300 }) }),
  },
  {
    name: 'max over axis 0 of (64, 33)',
    inputs: [[[64, 33], 12]],
    build: (fg, [x]) => x.max(0),
    reference: (ref, [x]) => ({ data: ref.reduce(x.data, x.shape, [0], false, 'max').data, tol: 0 }),
  },
  {
    name: 'softmax over the last axis of (33, 70)',
    inputs: [[[33, 70], 13, 6]],
    build: (fg, [x]) => x.softmax(-1),
    reference: (ref, [x]) => ({ data: ref.softmaxLast(x.data, x.shape), tol: ref.tol('f32', { ops: 4, reduce: 70 }) }),
  },
  {
    name: 'exp of a narrowed, transposed view of (12, 20)',
    inputs: [[[12, 20], 14]],
    build: (fg, [x]) => x.narrow(1, 3, 10).t().exp(),
    reference: (ref, [x]) => ({
      data: ref.strided(x.data, [10, 12], [1, 20], 3).map(Math.exp),
      tol: ref.tol('f32', { ops: 1 }),
    }),
  },
];

/**
 * Runs every case on `fg` (what `init()` gave) and resolves to one result
 * per case: `{ name, shape, device, values, intoMatches }` or `{ name, error }`
 * (`intoMatches`: `toArray(into)` filled `into` with the same values and
 * returned it).
 */
export async function runCases(fg) {
  const out = [];
  for (const c of CASES) {
    try {
      const ins = inputsOf(c).map((i) => fg.tensor(i.data, i.shape));
      const y = c.build(fg, ins);
      const values = await y.toArray();
      // The same read into a caller's array (on WebGPU: the staged copy set into it).
      const into = new values.constructor(values.length).fill(7);
      const back = await y.toArray(into);
      const intoMatches = back === into && into.every((v, i) => Object.is(v, values[i]));
      out.push({ name: c.name, shape: y.shape, device: y.device, values: Array.from(values), intoMatches });
      y.dispose();
      ins.forEach((t) => t.dispose());
    } catch (e) {
      out.push({ name: c.name, error: `${e.code ?? e.name}: ${e.message}` });
    }
  }
  return out;
}
