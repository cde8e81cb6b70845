// The core builds carry no image codecs: fg.image.* there, and asking for
// the image build after a core build is loaded, must fail with a code that
// says how to load it (FG_NOT_IN_BUILD), not a TypeError from a missing
// export. Its own file: node --test gives each file its own realm, and the
// first init() of a realm picks the build.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { init, FusegraphError } from 'fusegraph';

const fg = await init({ backend: 'cpu' });

function rejectsCode(what, err, code, mentions) {
  assert.ok(err instanceof FusegraphError, `${what}: ${err} is not a FusegraphError`);
  assert.equal(err.code, code, `${what}: code ${err.code}, message ${err.message}`);
  assert.ok(err.message.includes(mentions), `${what}: message ${JSON.stringify(err.message)} does not mention ${mentions}`);
}

test('fg.image on a core build throws FG_NOT_IN_BUILD naming the op and the fix', () => {
  for (const [name, call] of [
    ['probe', () => fg.image.probe(new Uint8Array(8))],
    ['decode', () => fg.image.decode(new Uint8Array(8))],
    ['transform', () => fg.image.transform(new Uint8Array(8), { width: 10 })],
  ]) {
    let err;
    try {
      call();
    } catch (e) {
      err = e;
    }
    rejectsCode(`image.${name}`, err, 'FG_NOT_IN_BUILD', `image.${name}`);
    assert.ok(err.message.includes("'fusegraph/image'"), err.message);
  }
});

test('init({ image: true }) after a core build is loaded throws FG_NOT_IN_BUILD', async () => {
  let err;
  try {
    await init({ backend: 'cpu', image: true });
  } catch (e) {
    err = e;
  }
  // The CPU-only build: SIMD128, or relaxed SIMD where the runtime has it.
  rejectsCode('init image', err, 'FG_NOT_IN_BUILD', fg.simd === 'relaxed' ? 'relaxed build' : 'cpu build');
});

test('init rejects a non-boolean image option', async () => {
  let err;
  try {
    await init({ image: 'yes' });
  } catch (e) {
    err = e;
  }
  rejectsCode('init image: "yes"', err, 'FG_INVALID_ARGUMENT', 'image must be true or false');
});
