// A small program as a user of the package writes it: imports 'fusegraph'
// (or a given entry), runs a fused chain, a matmul and a softmax on fixed
// inputs, and returns what it read. Deno, workerd and the Vite-built page
// run this same file; the Node side compares with the f64 reference.

import { randomF32 } from '../data.js';

export const SHAPES = { a: [24, 16], b: [16, 12], bias: [12] };
export const SEEDS = { a: 31, b: 32, bias: 33 };

export function inputs() {
  const n = (s) => s.reduce((x, y) => x * y, 1);
  return Object.fromEntries(Object.keys(SHAPES).map((k) => [k, randomF32(n(SHAPES[k]), SEEDS[k])]));
}

/** softmax(relu(a @ b + bias)) and the backend (and build: fg.simd) it ran on. */
export async function compute(init, options = {}) {
  const fg = await init(options);
  const x = inputs();
  const y = fg.tidy(() =>
    fg.tensor(x.a, SHAPES.a).matmul(fg.tensor(x.b, SHAPES.b)).add(fg.tensor(x.bias, SHAPES.bias)).relu().softmax(-1),
  );
  const values = Array.from(await y.toArray());
  const shape = y.shape;
  y.dispose();
  return { backend: fg.backend, simd: fg.simd, shape, values, live: fg.liveTensors() };
}
