// Memory is freed: dispose() releases a handle at once, and handles that
// are dropped without dispose() are released by the FinalizationRegistry.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { init } from 'fusegraph';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const fg = await init({ backend: 'cpu' });

test('dispose() frees the handle at once', () => {
  const before = fg.liveTensors();
  const ts = Array.from({ length: 50 }, () => fg.ones([1000]));
  assert.equal(fg.liveTensors(), before + 50);
  ts.forEach((t) => t.dispose());
  assert.equal(fg.liveTensors(), before);
});

test('dropped tensors are freed by garbage collection', async () => {
  const before = fg.liveTensors();
  (() => {
    for (let i = 0; i < 200; i++) fg.ones([256]).add(1).toArraySync();
  })();
  assert.ok(fg.liveTensors() >= before, 'handles exist before collection');
  for (let i = 0; i < 50 && fg.liveTensors() > before; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(fg.liveTensors(), before, 'every dropped handle was finalized');
});

test('wasm memory stays bounded over many 4 MB results when disposed', async () => {
  const memory = () => process.memoryUsage().arrayBuffers;
  let peak = 0;
  for (let i = 0; i < 100; i++) {
    const t = fg.rand([1 << 20], { seed: i }).mul(2);
    t.toArraySync();
    t.dispose();
    peak = Math.max(peak, memory());
  }
  // 100 x 4 MB = 400 MB if nothing were freed.
  assert.ok(peak < 200 * 2 ** 20, `array buffers peaked at ${(peak / 2 ** 20).toFixed(0)} MB`);
});

test('tidy() disposes the intermediates of a chain and keeps what it returns', async () => {
  const before = fg.liveTensors();
  const a = fg.ones([4]);
  const { y, z } = fg.tidy(() => {
    const t = a.mul(2).add(1);
    return { y: t.relu(), z: [t.neg()] };
  });
  assert.equal(fg.liveTensors(), before + 3, 'a, y and z[0] remain');
  assert.deepEqual(Array.from(await y.toArray()), [3, 3, 3, 3]);
  assert.deepEqual(Array.from(await z[0].toArray()), [-3, -3, -3, -3]);
  assert.equal(a.disposed, false);
  [a, y, z[0]].forEach((t) => t.dispose());
  assert.equal(fg.liveTensors(), before);
  assert.throws(() => fg.tidy(() => fg.ones([2]).add(fg.ones([3]))), (e) => e.code === 'FG_SHAPE_MISMATCH');
  assert.equal(fg.liveTensors(), before, 'a throwing tidy still disposes');
});
