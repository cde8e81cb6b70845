// The relaxed-SIMD CPU build (dist/relaxed/): init() loads it only where the
// runtime validates the relaxed-SIMD probe module, `simd` forces either
// build, and its matmul (gemm microkernels on f32x4.relaxed_madd) matches
// the f64 reference with the f32 tolerances of ops.test.js.
//
// `npm test` runs this file twice: as is (Node 20 has relaxed SIMD only
// behind a flag, so the SIMD128 build loads) and under
// `--experimental-wasm-relaxed-simd` (the relaxed build loads). Either way
// the first test starts one child Node with the flag and one without, so
// both choices are checked in every run.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { init } from 'fusegraph';
import { probeRelaxedSimd } from '../src/backends.js';
import * as ref from './reference.js';

const run = promisify(execFile);
const FLAG = '--experimental-wasm-relaxed-simd';
const major = Number(process.versions.node.split('.')[0]);
// V8 ships relaxed SIMD from 11.4 on (Node 21+); Node 20's V8 11.3 needs the flag.
const hasRelaxed = major >= 21 || process.execArgv.includes(FLAG);
// What a child Node needs for relaxed SIMD (nothing from Node 21 on).
const WITH_RELAXED = major >= 21 ? [] : [FLAG];

/** What `init(options)` picks in a fresh Node started with `flags`: `{ probe, simd, backend }`. */
async function childChoice(flags, options = {}) {
  const script = `
    import { init } from 'fusegraph';
    import { probeRelaxedSimd } from './src/backends.js';
    const fg = await init(${JSON.stringify(options)});
    console.log(JSON.stringify({ probe: probeRelaxedSimd(), simd: fg.simd, backend: fg.backend }));
  `;
  const cwd = new URL('..', import.meta.url);
  const { stdout } = await run(process.execPath, [...flags, '--input-type=module', '-e', script], { cwd });
  return JSON.parse(stdout.trim().split('\n').at(-1));
}

test('the relaxed-SIMD probe says what this runtime validates', async () => {
  assert.equal(probeRelaxedSimd(), hasRelaxed, `Node ${process.version}, execArgv ${process.execArgv.join(' ')}`);
  const flagged = await childChoice(WITH_RELAXED);
  assert.deepEqual(flagged, { probe: true, simd: 'relaxed', backend: 'cpu' });
  const plain = await childChoice([]);
  const want = major >= 21 ? 'relaxed' : 'simd128';
  assert.deepEqual(plain, { probe: major >= 21, simd: want, backend: 'cpu' });
});

test("init({ simd: 'simd128' }) loads the SIMD128 build even where relaxed SIMD is present", async () => {
  assert.equal((await childChoice(WITH_RELAXED, { simd: 'simd128' })).simd, 'simd128');
  assert.equal((await childChoice(WITH_RELAXED, { simd: 'relaxed', backend: 'cpu' })).simd, 'relaxed');
});

test('bad simd options are FG_INVALID_ARGUMENT; relaxed without relaxed SIMD is FG_DEVICE_UNAVAILABLE', async () => {
  await assert.rejects(init({ simd: 'fma' }), { code: 'FG_INVALID_ARGUMENT' });
  await assert.rejects(init({ simd: 'relaxed', image: true }), { code: 'FG_INVALID_ARGUMENT' });
  await assert.rejects(init({ simd: 'relaxed', backend: 'webgpu' }), { code: 'FG_INVALID_ARGUMENT' });
  if (!hasRelaxed) await assert.rejects(init({ simd: 'relaxed' }), { code: 'FG_DEVICE_UNAVAILABLE' });
});

test('the first init() picks the build; a later simd that disagrees is FG_NOT_IN_BUILD', async () => {
  const fg = await init({ backend: 'cpu' });
  assert.equal(fg.simd, hasRelaxed ? 'relaxed' : 'simd128');
  assert.equal((await init({ backend: 'cpu', simd: 'auto' })).simd, fg.simd);
  await assert.rejects(init({ simd: hasRelaxed ? 'simd128' : 'relaxed' }), { code: 'FG_NOT_IN_BUILD' });
});

/** A deterministic generator of shapes (xorshift32). */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return (lo, hi) => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return lo + (s % (hi - lo + 1));
  };
}

test('matmul on the loaded CPU build matches the f64 reference: random shapes, transposed views', async () => {
  const fg = await init({ backend: 'cpu' });
  const int = rng(0x5eed);
  // Dims that are not multiples of 4 or 8 (the microkernels' tiles), some that
  // are, and a few large enough for gemm's packed, blocked path.
  const shapes = [
    [1, 1, 1],
    [3, 5, 7],
    [8, 8, 8],
    [9, 17, 15],
    [33, 65, 31],
    [64, 256, 48],
    [130, 257, 67],
    [255, 301, 129],
  ];
  for (let i = 0; i < 12; i++) shapes.push([int(1, 90), int(1, 200), int(1, 90)]);
  for (const [i, [m, k, n]] of shapes.entries()) {
    const a = ref.randomF32(m * k, 100 + i);
    const b = ref.randomF32(k * n, 200 + i);
    const want = ref.matmul(a, [m, k], b, [k, n]).data;
    const t = ref.tol('f32', { reduce: k });
    const ta = fg.tensor(a, [m, k]);
    const tb = fg.tensor(b, [k, n]);
    ref.assertClose(`(${m}, ${k}) @ (${k}, ${n}) on ${fg.simd}`, await ta.matmul(tb).toArray(), want, t);
    // The same product from transposed views: (a.T).T @ (b.T).T, strides only.
    const at = ref.transposeLast(a, [m, k]);
    const bt = ref.transposeLast(b, [k, n]);
    const va = fg.tensor(at.data, [k, m]).t();
    const vb = fg.tensor(bt.data, [n, k]).t();
    ref.assertClose(`(${m}, ${k}).T.T @ (${k}, ${n}).T.T on ${fg.simd}`, await va.matmul(vb).toArray(), want, t);
    // Batched with a broadcast left operand.
    if (i % 4 === 3) {
      const b2 = ref.randomF32(2 * k * n, 300 + i);
      const want2 = ref.matmul(a, [1, m, k], b2, [2, k, n]).data;
      const got2 = await fg.tensor(a, [1, m, k]).matmul(fg.tensor(b2, [2, k, n])).toArray();
      ref.assertClose(`(1, ${m}, ${k}) @ (2, ${k}, ${n}) on ${fg.simd}`, got2, want2, t);
    }
  }
});

test("with simd: 'auto', a wasm override without wasmRelaxed keeps to the given SIMD128 build", async () => {
  const cpuWasm = new URL('../dist/fusegraph_wasm_bg.wasm', import.meta.url);
  const script = `
    import { readFileSync } from 'node:fs';
    import { init } from 'fusegraph';
    const fg = await init({ backend: 'cpu', wasm: readFileSync(new URL(${JSON.stringify(cpuWasm.href)})) });
    console.log(JSON.stringify({ simd: fg.simd }));
  `;
  const { stdout } = await run(process.execPath, [...WITH_RELAXED, '--input-type=module', '-e', script], { cwd: new URL('..', import.meta.url) });
  assert.deepEqual(JSON.parse(stdout.trim()), { simd: 'simd128' });
});

test('NaN stays NaN through unary ops, maximum/minimum, clamp, reductions and softmax on the loaded CPU build', async () => {
  // In the relaxed build LLVM may lower clamps and pmax to f32x4.relaxed_min/max,
  // whose NaN result is the engine's choice (exp(NaN) once came out 0 there).
  // NaNs sit in the 16-wide SIMD bodies and in the scalar tails.
  const fg = await init({ backend: 'cpu' });
  const n = 37;
  const nans = [3, 20, 36];
  for (const dtype of ['f32', 'f64']) {
    const data = Float64Array.from(ref.randomF32(n, 31, 3));
    for (const i of nans) data[i] = NaN;
    const x = fg.tensor(data, [n], { dtype });
    const other = fg.full([n], 0.5, { dtype });
    const expectNan = (what, out) => {
      for (const i of nans) assert.ok(Number.isNaN(out[i]), `${fg.simd}: ${dtype} ${what} at ${i} gave ${out[i]}`);
    };
    for (const op of ['neg', 'abs', 'exp', 'log', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'gelu', 'geluTanh', 'silu']) {
      expectNan(op, fg.tidy(() => x[op]().toArraySync()));
    }
    for (const op of ['maximum', 'minimum']) {
      expectNan(`${op}(x, 0.5)`, fg.tidy(() => x[op](other).toArraySync()));
      expectNan(`${op}(0.5, x)`, fg.tidy(() => other[op](x).toArraySync()));
    }
    expectNan('clamp', fg.tidy(() => x.clamp(-1, 1).toArraySync()));
    for (const op of ['max', 'min', 'sum', 'mean']) {
      assert.ok(Number.isNaN(fg.tidy(() => x[op]().toArraySync())[0]), `${fg.simd}: ${dtype} ${op} over a row with NaN`);
    }
  }
  // Softmax: a row with a NaN is NaN throughout, other rows are untouched.
  const rows = new Float32Array(3 * n).map((_, i) => Math.sin(i));
  rows[5] = NaN; // row 0, SIMD body
  rows[2 * n + 35] = NaN; // row 2, scalar tail
  for (const op of ['softmax', 'logSoftmax']) {
    const out = fg.tidy(() => fg.tensor(rows, [3, n])[op](-1).toArraySync());
    for (let i = 0; i < 3 * n; i++) {
      const row = Math.floor(i / n);
      assert.equal(Number.isNaN(out[i]), row !== 1, `${fg.simd}: ${op} row ${row} element ${i % n} gave ${out[i]}`);
    }
  }
});
