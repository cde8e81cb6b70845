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
