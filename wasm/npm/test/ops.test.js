// Results of the npm package (Node, CPU/SIMD128 path) against the f64
// reference in reference.js: matmul, elementwise chains with broadcasting,
// reductions, softmax, views, and the typed-array round trips.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { init, Tensor } from 'fusegraph';
import * as ref from './reference.js';

const fg = await init({ backend: 'cpu' });

function t(shape, seed, scale = 1) {
  const data = ref.randomF32(ref.numel(shape), seed, scale);
  return { data, shape, tensor: fg.tensor(data, shape) };
}

test('matmul matches the f64 reference for odd, square and batched shapes', async () => {
  const cases = [
    [[1, 1], [1, 1]],
    [[3, 5], [5, 2]],
    [[17, 33], [33, 9]],
    [[128, 64], [64, 96]],
    [[257, 130], [130, 65]],
    // k past one 512-deep block of the packed gemm, m and n not multiples
    // of its 12x3 tile: the partial-tile kernels and the accumulating pass.
    [[70, 1030], [1030, 41]],
    [[2, 3, 4, 5], [5, 6]],
    [[2, 1, 7, 8], [3, 8, 4]],
  ];
  for (const [i, [as, bs]] of cases.entries()) {
    const a = t(as, 10 + i);
    const b = t(bs, 20 + i);
    const got = await a.tensor.matmul(b.tensor).toArray();
    const want = ref.matmul(a.data, as, b.data, bs);
    assert.deepEqual(a.tensor.matmul(b.tensor).shape, want.shape);
    const k = as[as.length - 1];
    ref.assertClose(`matmul ${as} @ ${bs}`, got, want.data, ref.tol('f32', { reduce: k }));
  }
});

test('matmul with a transposed view and an epilogue chain', async () => {
  const a = t([40, 24], 1);
  const b = t([30, 24], 2); // used as b.T: (24, 30)
  const bias = t([30], 3);
  const got = await a.tensor.matmul(b.tensor.t()).add(bias.tensor).relu().toArray();
  const bt = ref.transposeLast(b.data, b.shape);
  const mm = ref.matmul(a.data, a.shape, bt.data, bt.shape);
  const want = ref.zip(mm.data, mm.shape, bias.data, bias.shape, (x, y) => Math.max(x + y, 0));
  ref.assertClose('relu(a @ b.T + bias)', got, want.data, ref.tol('f32', { ops: 2, reduce: 24 }));
});

test('elementwise chains with broadcasting', async () => {
  const a = t([4, 1, 5], 4);
  const b = t([3, 1], 5);
  const c = t([5], 6);
  // relu(a * b + c) over (4, 3, 5)
  const got = await a.tensor.mul(b.tensor).add(c.tensor).relu().toArray();
  const ab = ref.zip(a.data, a.shape, b.data, b.shape, (x, y) => x * y);
  const want = ref.zip(ab.data, ab.shape, c.data, c.shape, (x, y) => Math.max(x + y, 0));
  ref.assertClose('relu(a*b+c)', got, want.data, ref.tol('f32', { ops: 3 }));

  // A longer chain with unary ops and scalars: tanh(sigmoid(x) * 2 - y) / 3 + exp(x)
  const x = t([6, 7], 7);
  const y = t([7], 8);
  const chain = x.tensor.sigmoid().mul(2).sub(y.tensor).tanh().div(3).add(x.tensor.exp());
  const sig = (v) => 1 / (1 + Math.exp(-v));
  const want2 = ref.zip(x.data, x.shape, y.data, y.shape, (p, q) => Math.tanh(sig(p) * 2 - q) / 3 + Math.exp(p));
  ref.assertClose('long chain', await chain.toArray(), want2.data, ref.tol('f32', { ops: 7 }));

  // GELU (erf) and SiLU on a wider range.
  const g = t([1000], 9, 4);
  ref.assertClose('gelu', await g.tensor.gelu().toArray(), Float64Array.from(g.data, (v) => (v / 2) * (1 + ref.erf(v / Math.SQRT2))), ref.tol('f32', { ops: 4 }));
  ref.assertClose('silu', await g.tensor.silu().toArray(), Float64Array.from(g.data, (v) => v / (1 + Math.exp(-v))), ref.tol('f32', { ops: 3 }));

  // Comparisons give bool (Uint8Array 0/1).
  const cmp = await a.tensor.gt(b.tensor).toArray();
  assert.ok(cmp instanceof Uint8Array);
  assert.deepEqual(Array.from(cmp), Array.from(ref.zip(a.data, a.shape, b.data, b.shape, (p, q) => (p > q ? 1 : 0)).data));
});

test('reductions over axes, with and without keepdim', async () => {
  const x = t([6, 5, 7], 11);
  for (const op of ['sum', 'mean', 'max', 'min']) {
    for (const [axes, keepdim] of [[[], false], [[0], false], [[-1], true], [[0, 2], false], [[1], true]]) {
      const got = x.tensor[op](axes, keepdim);
      const want = ref.reduce(x.data, x.shape, axes, keepdim, op);
      assert.deepEqual(got.shape, want.shape, `${op} ${axes} shape`);
      const n = ref.numel(x.shape) / want.data.length;
      ref.assertClose(`${op} over ${JSON.stringify(axes)}`, await got.toArray(), want.data, ref.tol('f32', { reduce: n }));
    }
  }
  // A reduction of a large vector, fused with its producer.
  const big = t([1 << 16], 12);
  const got = await big.tensor.mul(big.tensor).sum().toArray();
  const want = big.data.reduce((s, v) => s + v * v, 0);
  ref.assertClose('sum(x*x) of 65536', got, [want], ref.tol('f32', { ops: 2, reduce: 1 << 16 }));
});

test('softmax and log-softmax, including large logits', async () => {
  const x = t([9, 33], 13, 30);
  const want = ref.softmaxLast(x.data, x.shape);
  ref.assertClose('softmax', await x.tensor.softmax(-1).toArray(), want, ref.tol('f32', { ops: 4, reduce: 33 }));
  ref.assertClose('log_softmax', await x.tensor.logSoftmax(-1).toArray(), Float64Array.from(want, Math.log), ref.tol('f32', { ops: 4, reduce: 33 }));
  // softmax over axis 0 = softmax of the transpose, transposed back
  const tr = ref.transposeLast(x.data, x.shape);
  const s0 = ref.transposeLast(ref.softmaxLast(tr.data, tr.shape), tr.shape);
  ref.assertClose('softmax axis 0', await x.tensor.softmax(0).toArray(), s0.data, ref.tol('f32', { ops: 4, reduce: 9 }));
  // each row sums to 1
  const rows = await x.tensor.softmax(-1).sum([-1]).toArray();
  ref.assertClose('softmax rows sum to 1', rows, new Float64Array(9).fill(1), ref.tol('f32', { ops: 5, reduce: 33 }));
});

test('softmax rows of every remainder length and past a 4096 block, with NaN and infinite rows', async () => {
  // The row kernel runs 16 elements per SIMD128 step with a scalar tail and
  // sums in blocks of 4096: lengths around both edges.
  for (const n of [1, 3, 4, 7, 15, 16, 17, 33, 4095, 4097, 9000]) {
    const x = t([3, n], 40 + n, 20);
    const want = ref.softmaxLast(x.data, x.shape);
    ref.assertClose(`softmax rows of ${n}`, await x.tensor.softmax(-1).toArray(), want, ref.tol('f32', { ops: 4, reduce: n }));
  }
  // NaN anywhere, +inf, or a row of -inf make the row NaN (as the f64
  // reference and PyTorch do); -inf beside finite values gives 0 there.
  const n = 21;
  const data = ref.randomF32(6 * n, 77, 5);
  // NaN in the 16-wide body of row 0 and in the scalar tail of row 5.
  data[3] = NaN;
  data[5 * n + 19] = NaN;
  data[n + 20] = Infinity;
  data.fill(-Infinity, 2 * n, 3 * n);
  data[3 * n + 5] = -Infinity;
  data[4 * n + 16] = -Infinity;
  const got = await fg.tensor(data, [6, n]).softmax(-1).toArray();
  ref.assertClose('softmax special rows', got, ref.softmaxLast(data, [6, n]), ref.tol('f32', { ops: 4, reduce: n }));
  assert.equal(got[3 * n + 5], 0);
});

test('views: transpose, permute, narrow, expand, reshape, as_strided, squeeze', async () => {
  const x = t([2, 3, 4], 14);
  const tr = x.tensor.transpose(0, 2);
  assert.deepEqual(tr.shape, [4, 3, 2]);
  assert.equal(tr.isContiguous(), false);
  ref.assertClose('transpose', await tr.toArray(), ref.strided(x.data, [4, 3, 2], [1, 4, 12], 0), 0);
  ref.assertClose('permute', await x.tensor.permute([1, 0, 2]).toArray(), ref.strided(x.data, [3, 2, 4], [4, 12, 1], 0), 0);
  ref.assertClose('narrow', await x.tensor.narrow(2, 1, 2).toArray(), ref.strided(x.data, [2, 3, 2], [12, 4, 1], 1), 0);
  ref.assertClose('expand', await x.tensor.narrow(0, 1, 1).expand([3, 3, 4]).toArray(), ref.strided(x.data, [3, 3, 4], [0, 4, 1], 12), 0);
  const r = x.tensor.reshape([4, -1]);
  assert.deepEqual(r.shape, [4, 6]);
  ref.assertClose('reshape', await r.toArray(), x.data, 0);
  ref.assertClose('as_strided', await x.tensor.asStrided([3, 3], [5, 2], 1).toArray(), ref.strided(x.data, [3, 3], [5, 2], 1), 0);
  assert.deepEqual(x.tensor.unsqueeze(1).shape, [2, 1, 3, 4]);
  assert.deepEqual(x.tensor.unsqueeze(1).squeeze(1).shape, [2, 3, 4]);
  assert.deepEqual(x.tensor.flatten().shape, [24]);
  // A view feeding an elementwise op and a reduction (through strides, no copy op).
  const got = await tr.mul(2).sum([0]).toArray();
  const want = ref.reduce(Float64Array.from(ref.strided(x.data, [4, 3, 2], [1, 4, 12], 0), (v) => v * 2), [4, 3, 2], [0], false, 'sum');
  ref.assertClose('sum(transpose*2)', got, want.data, ref.tol('f32', { ops: 2, reduce: 4 }));
  const c = tr.contiguous();
  assert.equal(c.isContiguous(), true);
  ref.assertClose('contiguous', await c.toArray(), await tr.toArray(), 0);
});

test('layer norm and argmax', async () => {
  const x = t([5, 16], 15, 3);
  const w = t([16], 16);
  const b = t([16], 17);
  const got = await x.tensor.layerNorm(1, { weight: w.tensor, bias: b.tensor, eps: 1e-5 }).toArray();
  const want = new Float64Array(80);
  for (let r = 0; r < 5; r++) {
    const row = Array.from(x.data.subarray(r * 16, r * 16 + 16));
    const mu = row.reduce((s, v) => s + v, 0) / 16;
    const va = row.reduce((s, v) => s + (v - mu) ** 2, 0) / 16;
    row.forEach((v, j) => (want[r * 16 + j] = ((v - mu) / Math.sqrt(va + 1e-5)) * w.data[j] + b.data[j]));
  }
  ref.assertClose('layer_norm', got, want, ref.tol('f32', { ops: 6, reduce: 16 }));
  const am = await x.tensor.argmax(1).toArray();
  const wantAm = Array.from({ length: 5 }, (_, r) => {
    const row = Array.from(x.data.subarray(r * 16, r * 16 + 16));
    return row.indexOf(Math.max(...row));
  });
  assert.deepEqual(Array.from(am), wantAm);
});

test('typed arrays in and out keep their dtype and bits', async () => {
  const f64 = new Float64Array([1e-300, 2.5, -3.25, Math.PI]);
  const back64 = await fg.tensor(f64, [2, 2]).toArray();
  assert.ok(back64 instanceof Float64Array);
  assert.deepEqual(Array.from(back64), Array.from(f64));
  const i32 = new Int32Array([-7, 0, 2147483647, 5]);
  const outI = await fg.tensor(i32, [4]).add(fg.tensor(new Int32Array([1, 1, 0, 1]), [4])).toArray();
  assert.ok(outI instanceof Int32Array);
  assert.deepEqual(Array.from(outI), [-6, 1, 2147483647, 6]);
  const u8 = new Uint8Array([0, 1, 200, 255]);
  const outU = await fg.tensor(u8, [4]).toArray();
  assert.ok(outU instanceof Uint8Array);
  assert.deepEqual(Array.from(outU), [0, 1, 200, 255]);
  const bools = await fg.tensor(new Uint8Array([0, 3, 1, 0]), [4], { dtype: 'bool' }).logicalNot().toArray();
  assert.deepEqual(Array.from(bools), [1, 0, 0, 1]);
  // f16 bits: 1.0 = 0x3c00, -2.0 = 0xc000, 0.5 = 0x3800; bf16 1.0 = 0x3f80
  const h = fg.tensor(new Uint16Array([0x3c00, 0xc000, 0x3800]), [3], { dtype: 'f16' });
  assert.equal(h.dtype, 'f16');
  assert.deepEqual(Array.from(await h.cast('f32').toArray()), [1, -2, 0.5]);
  assert.deepEqual(Array.from(await h.mul(2).toArray()), [0x4000, 0xc400, 0x3c00]);
  const bf = fg.tensor(new Uint16Array([0x3f80, 0x4000]), [2], { dtype: 'bf16' });
  assert.deepEqual(Array.from(await bf.cast('f32').toArray()), [1, 2]);
  assert.deepEqual(Array.from(await fg.tensor(new Float32Array([1, 2]), [2]).cast('bf16').toArray()), [0x3f80, 0x4000]);
  // Plain arrays default to f32; the input array is not aliased (a copy went to wasm).
  const src = new Float32Array([1, 2, 3]);
  const tt = fg.tensor(src, [3]);
  src[0] = 100;
  assert.deepEqual(Array.from(await tt.toArray()), [1, 2, 3]);
  assert.deepEqual(Array.from(await fg.tensor([1, 2, 3]).toArray()), [1, 2, 3]);
  assert.ok(tt instanceof Tensor);
});

test("toArray(into) / toArraySync(into) write into the caller's typed array", async () => {
  // A non-contiguous view (transpose) of a computed f32 result, into a
  // reused array. relu and transposes are exact, so the values must be too.
  const x = t([5, 7], 91, 3);
  const exact = (data) => Array.from(Float32Array.from(ref.transposeLast(data, [5, 7]).data));
  const into = new Float32Array(35).fill(NaN);
  for (let round = 0; round < 2; round++) {
    const got = fg.tidy(() => x.tensor.relu().t().toArraySync(into));
    assert.equal(got, into, 'returns the array it was given');
    assert.deepEqual(Array.from(into), exact(Float32Array.from(x.data, (v) => Math.max(v, 0))));
  }
  assert.equal(await x.tensor.t().toArray(into), into);
  assert.deepEqual(Array.from(into), exact(x.data));
  // Every dtype's array class.
  const f64 = new Float64Array([1e-300, -2.5]);
  assert.deepEqual(Array.from(fg.tensor(f64, [2]).toArraySync(new Float64Array(2))), Array.from(f64));
  assert.deepEqual(Array.from(fg.tensor(new Int32Array([-7, 2147483647]), [2]).toArraySync(new Int32Array(2))), [-7, 2147483647]);
  assert.deepEqual(Array.from(fg.tensor(new Uint8Array([0, 255]), [2]).toArraySync(new Uint8Array(2))), [0, 255]);
  const bools = fg.tensor(new Uint8Array([0, 3, 1]), [3], { dtype: 'bool' }).logicalNot();
  assert.deepEqual(Array.from(bools.toArraySync(new Uint8Array(3))), [1, 0, 0]);
  const h = fg.tensor(new Uint16Array([0x3c00, 0xc000]), [2], { dtype: 'f16' }).mul(2);
  assert.deepEqual(Array.from(h.toArraySync(new Uint16Array(2))), [0x4000, 0xc400]);
  // An empty tensor into an empty array.
  const empty = new Float32Array(0);
  assert.equal(fg.zeros([3, 0]).toArraySync(empty), empty);
});

test('creation ops: full, arange, rand, randn', async () => {
  assert.deepEqual(Array.from(await fg.full([2, 2], 3.5).toArray()), [3.5, 3.5, 3.5, 3.5]);
  assert.deepEqual(Array.from(await fg.arange(0, 5, 1, { dtype: 'i32' }).toArray()), [0, 1, 2, 3, 4]);
  const r = await fg.rand([1000], { seed: 3 }).toArray();
  assert.ok(r.every((v) => v >= 0 && v < 1));
  assert.deepEqual(Array.from(await fg.rand([1000], { seed: 3 }).toArray()), Array.from(r), 'same seed, same values');
  assert.notDeepEqual(Array.from(await fg.rand([1000], { seed: 5 }).toArray()), Array.from(r), 'another seed, other values');
  const n = await fg.randn([20000], { seed: 4 }).toArray();
  const mean = n.reduce((s, v) => s + v, 0) / n.length;
  const sd = Math.sqrt(n.reduce((s, v) => s + (v - mean) ** 2, 0) / n.length);
  assert.ok(Math.abs(mean) < 0.05 && Math.abs(sd - 1) < 0.05, `randn mean ${mean} sd ${sd}`);
});
