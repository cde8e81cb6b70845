// Bad input never crashes: every mistake is a FusegraphError with a stable
// code and a message naming the op, and the module keeps working after it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { init, FusegraphError } from 'fusegraph';

const fg = await init({ backend: 'cpu' });

function throwsCode(what, fn, code, messagePart) {
  let err;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err, `${what}: did not throw`);
  assert.ok(err instanceof FusegraphError, `${what}: ${err} is not a FusegraphError`);
  assert.ok(err instanceof Error);
  assert.equal(err.name, 'FusegraphError');
  assert.equal(err.code, code, `${what}: code ${err.code}, message ${err.message}`);
  if (messagePart) assert.ok(err.message.includes(messagePart), `${what}: message "${err.message}" lacks "${messagePart}"`);
}

test('bad shapes give shape, size, axis and range codes', () => {
  const a = fg.zeros([3, 4]);
  const b = fg.zeros([5]);
  throwsCode('add (3,4)+(5)', () => a.add(b), 'FG_SHAPE_MISMATCH', 'add: cannot broadcast [3, 4] with [5]');
  throwsCode('matmul (3,4)@(3,4)', () => a.matmul(a), 'FG_SHAPE_MISMATCH', 'matmul');
  throwsCode('matmul (5)@(3,4)', () => b.matmul(a), 'FG_SHAPE_MISMATCH', 'matmul: inner dimensions differ');
  throwsCode('matmul of a scalar', () => fg.full([], 1).matmul(a), 'FG_SHAPE_MISMATCH', 'matmul: needs rank >= 1');
  throwsCode('tensor with too few values', () => fg.tensor(new Float32Array(5), [2, 3]), 'FG_BAD_SIZE', 'from_vec');
  throwsCode('reshape 12 -> 5', () => a.reshape([5]), 'FG_BAD_SIZE', 'reshape');
  throwsCode('softmax axis 2 of rank 2', () => a.softmax(2), 'FG_BAD_AXIS', 'softmax');
  throwsCode('sum axis -3', () => a.sum([-3]), 'FG_BAD_AXIS');
  throwsCode('permute [0, 0]', () => a.permute([0, 0]), 'FG_BAD_AXIS');
  throwsCode('squeeze a size-3 axis', () => a.squeeze(0), 'FG_BAD_AXIS', 'squeeze');
  throwsCode('narrow past the end', () => a.narrow(1, 2, 5), 'FG_OUT_OF_RANGE', 'narrow');
  throwsCode('as_strided out of bounds', () => a.asStrided([4, 4], [4, 1], 0), 'FG_OUT_OF_RANGE');
  throwsCode('expand a size-3 axis', () => a.expand([6, 4]), 'FG_SHAPE_MISMATCH', 'expand');
  throwsCode('concat of mismatched shapes', () => fg.concat([a, fg.zeros([2, 5])], 0), 'FG_SHAPE_MISMATCH', 'concat');
  throwsCode('concat of nothing', () => fg.concat([], 0), 'FG_INVALID_ARGUMENT');
  throwsCode('negative shape', () => fg.zeros([2, -1]), 'FG_INVALID_ARGUMENT', 'shape');
  throwsCode('fractional shape', () => fg.tensor(new Float32Array(3), [1.5, 2]), 'FG_INVALID_ARGUMENT', 'shape');
  throwsCode('shape not an array', () => fg.rand('big'), 'FG_INVALID_ARGUMENT');
  throwsCode('fractional axis', () => a.softmax(0.5), 'FG_INVALID_ARGUMENT', 'axis');
  throwsCode('index out of range', () => a.indexSelect(0, fg.tensor(new Int32Array([0, 7]), [2])).toArraySync(), 'FG_OUT_OF_RANGE');
  throwsCode('two -1 in reshape', () => a.reshape([-1, -1]), 'FG_INVALID_ARGUMENT');
  throwsCode('huge shape', () => fg.zeros([2 ** 31, 2 ** 31, 2 ** 20]), 'FG_OUT_OF_MEMORY');
});

test('bad dtypes and values give dtype and argument codes', () => {
  const a = fg.zeros([2, 2]);
  throwsCode('unknown dtype name', () => fg.zeros([2], { dtype: 'f8' }), 'FG_INVALID_ARGUMENT', 'dtype');
  throwsCode('tensor with an unknown dtype', () => fg.tensor([1, 2], [2], { dtype: 'complex64' }), 'FG_BAD_DTYPE');
  throwsCode('Int8Array data', () => fg.tensor(new Int8Array(4), [4]), 'FG_BAD_DTYPE', 'Int8Array');
  throwsCode('string data', () => fg.tensor('1234', [4]), 'FG_BAD_DTYPE');
  throwsCode('Uint16Array as i32', () => fg.tensor(new Uint16Array(2), [2], { dtype: 'i32' }), 'FG_BAD_DTYPE', 'Uint16Array');
  throwsCode('cast to a bad name', () => a.cast('float'), 'FG_INVALID_ARGUMENT', 'cast');
  throwsCode('index_select with an f32 index', () => a.indexSelect(0, fg.zeros([1])), 'FG_BAD_DTYPE', 'index');
  throwsCode('add a string', () => a.add('1'), 'FG_INVALID_ARGUMENT');
  throwsCode('matmul with a plain object', () => a.matmul({}), 'FG_INVALID_ARGUMENT');
  throwsCode('where with a non-tensor', () => fg.where(a, a, 3), 'FG_INVALID_ARGUMENT');
  throwsCode('rand with a negative seed', () => fg.rand([2], { seed: -1 }), 'FG_INVALID_ARGUMENT', 'seed');
  throwsCode('layer norm over 3 dims of rank 2', () => a.layerNorm(3), 'FG_INVALID_ARGUMENT', 'layer_norm');
  throwsCode('toArraySync into the wrong class', () => a.toArraySync(new Float64Array(4)), 'FG_BAD_DTYPE', 'Float32Array');
  throwsCode('toArraySync into a plain array', () => a.toArraySync([0, 0, 0, 0]), 'FG_BAD_DTYPE', 'toArraySync');
  throwsCode('toArraySync into null', () => a.toArraySync(null), 'FG_BAD_DTYPE');
  throwsCode('toArraySync of bool into a Float32Array', () => a.gt(0).toArraySync(new Float32Array(4)), 'FG_BAD_DTYPE', 'Uint8Array');
  throwsCode('toArraySync into a short array', () => a.toArraySync(new Float32Array(3)), 'FG_BAD_SIZE', '[2, 2]');
  throwsCode('toArraySync into a long array', () => a.toArraySync(new Float32Array(5)), 'FG_BAD_SIZE', '5 elements');
  // The wasm side checks too: a direct call past the JS checks is a coded
  // Error, not a trap.
  assert.throws(() => a._handle().readInto(new Float32Array(3)), (e) => e.code === 'FG_BAD_SIZE' && e.message.includes('into has 3'));
  assert.throws(() => a._handle().readInto(new Int32Array(4)), (e) => e.code === 'FG_BAD_DTYPE');
  assert.deepEqual(Array.from(a.add(1).toArraySync(new Float32Array(4))), [1, 1, 1, 1]);
});

test('a disposed tensor gives FG_DISPOSED, and dispose is idempotent', () => {
  const a = fg.ones([2]);
  const b = a.add(1);
  a.dispose();
  a.dispose();
  assert.equal(a.disposed, true);
  throwsCode('use after dispose', () => a.relu(), 'FG_DISPOSED');
  throwsCode('disposed argument', () => b.add(a), 'FG_DISPOSED');
  // b still works: it holds its own reference to a's data.
  assert.deepEqual(Array.from(b.toArraySync()), [2, 2]);
});

test('the module keeps working after many errors', async () => {
  for (let i = 0; i < 200; i++) {
    assert.throws(() => fg.zeros([3]).add(fg.zeros([4])), FusegraphError);
  }
  const y = await fg.tensor([1, 2, 3]).mul(fg.tensor([2])).toArray();
  assert.deepEqual(Array.from(y), [2, 4, 6]);
});

test("init: forcing 'webgpu' fails with FG_DEVICE_UNAVAILABLE, 'auto' falls back to CPU and says why", async () => {
  await assert.rejects(init({ backend: 'webgpu' }), (e) => e instanceof FusegraphError && e.code === 'FG_DEVICE_UNAVAILABLE' && /webgpu/.test(e.message));
  await assert.rejects(init({ backend: 'gpu' }), (e) => e.code === 'FG_INVALID_ARGUMENT');
  const auto = await init();
  assert.equal(auto.backend, 'cpu');
  assert.match(auto.fallback, /CPU \((SIMD128|relaxed SIMD)\).*navigator\.gpu/);
  const cpu = await init({ backend: 'cpu' });
  assert.equal(cpu.backend, 'cpu');
  assert.equal(cpu.fallback, null);
  assert.equal(cpu.ones([1]).device, 'cpu');
});

test("init 'auto' with an adapter after the CPU-only build was loaded says so", async (t) => {
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  Object.defineProperty(globalThis, 'navigator', {
    configurable: true,
    value: { gpu: { requestAdapter: async () => ({ fake: true }) } },
  });
  t.mock.method(console, 'info', () => {});
  try {
    const fg2 = await init();
    assert.equal(fg2.backend, 'cpu');
    assert.match(fg2.fallback, /adapter is present.*CPU-only build/);
    await assert.rejects(init({ backend: 'webgpu' }), (e) => e.code === 'FG_DEVICE_UNAVAILABLE' && /CPU-only build/.test(e.message));
  } finally {
    if (saved) Object.defineProperty(globalThis, 'navigator', saved);
    else delete globalThis.navigator;
  }
});
