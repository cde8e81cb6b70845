// The f64 reference of consumer.js's computation, and the check every
// runtime test applies to what the runtime reported.

import assert from 'node:assert/strict';
import * as ref from '../reference.js';
import { SHAPES, inputs } from './consumer.js';

export function checkConsumerResult(r, backend) {
  assert.equal(r.error, undefined, r.error);
  assert.equal(r.backend, backend);
  assert.deepEqual(r.shape, [SHAPES.a[0], SHAPES.b[1]]);
  const x = inputs();
  const mm = ref.matmul(x.a, SHAPES.a, x.b, SHAPES.b);
  const z = ref.zip(mm.data, mm.shape, x.bias, SHAPES.bias, (p, q) => Math.max(p + q, 0));
  const want = ref.softmaxLast(z.data, z.shape);
  ref.assertClose(`softmax(relu(a @ b + bias)) on ${backend}`, r.values, want, ref.tol('f32', { ops: 6, reduce: 16 }));
  // tidy() freed the intermediates and the inputs; dispose() the result.
  assert.equal(r.live, 0);
}
