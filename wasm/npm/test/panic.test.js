// A panic must never cross the boundary as a bare trap: the panic hook
// records the message and the wrapper throws FG_PANIC with it. (Its own file:
// a trapped instance is poisoned, so nothing else may share this process.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { init, FusegraphError } from 'fusegraph';
// The loaded build's exports (the SIMD128 or the relaxed-SIMD one).
import { raw } from '../src/wasm.js';
import { guard } from '../src/errors.js';

test('a residual panic becomes FG_PANIC with its message, and poisons the instance', async () => {
  const fg = await init({ backend: 'cpu' });
  assert.throws(
    () => guard(() => raw.panicForTest()),
    (e) => e instanceof FusegraphError && e.code === 'FG_PANIC' && e.message.includes('deliberate panic for the boundary test'),
  );
  assert.throws(() => fg.ones([2]), (e) => e.code === 'FG_PANIC' && /must be reloaded/.test(e.message));
});
