// fusegraph (wasm, SIMD128, one thread) side by side with
// @tensorflow/tfjs-backend-wasm (SIMD, one thread) and onnxruntime-web
// (wasm, SIMD, one thread) in one Node process, on the same input bits.
//
// Each case is warmed up 5 times, then timed REPS times (fewer for the slow
// cases) in 5 rounds that alternate the libraries (so a slow spell of this
// shared machine is spread over all of them); we report median, p10 and
// p90. Two timings:
//  - end to end: JS typed arrays in -> result in a JS typed array, which is
//    what onnxruntime-web's session.run always does (it copies inputs into
//    its heap and outputs out); all three libraries are measured this way;
//  - compute: inputs already inside the library, result left there
//    (fusegraph: realize(); tfjs: the eager op), for fusegraph and tfjs.
// Every library's output is checked against an f64 reference (matmul: 2048
// sampled entries) in the same run. Results: ../results/wasm.json.
//
// Roofline: elementwise and softmax GB/s are compared with the copy
// bandwidth of one thread measured in the same run (TypedArray.set over
// 64 MiB); matmul GFLOP/s with the f32x4 mul + add rate one core sustains,
// also measured in the run (peak.mjs), or, when fusegraph loaded its
// relaxed-SIMD build, with the f32x4.relaxed_madd rate.
//
// Usage: node bench.mjs [--quick] [--only=SUBSTRING]
// Under `node --experimental-wasm-relaxed-simd` (Node 20; on by default from
// Node 21) fusegraph's init() loads its relaxed-SIMD build and the peers get
// the same runtime; that run is written to ../results/wasm_relaxed.json.

import os from 'node:os';
import { writeFileSync, readFileSync } from 'node:fs';
import { init } from 'fusegraph';
import * as tf from '@tensorflow/tfjs-core';
import { setWasmPaths, setThreadsCount } from '@tensorflow/tfjs-backend-wasm';
import * as ort from 'onnxruntime-web';
import { buildModel } from './onnx.mjs';
import { simd128PeakGflops, relaxedMaddPeakGflops } from './peak.mjs';

const quick = process.argv.includes('--quick');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
// Ten rounds: with five, a slow spell of this shared VM (up to 2x, for
// seconds) still fell on one library's reps more than on the others'.
const ROUNDS = quick ? 2 : 10;

// ---- setup: one thread everywhere ----
const fg = await init({ backend: 'cpu' });
const tfDist = new URL('./node_modules/@tensorflow/tfjs-backend-wasm/dist/', import.meta.url).pathname;
tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
setWasmPaths(tfDist);
setThreadsCount(1);
await tf.setBackend('wasm');
await tf.ready();
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;

// ---- helpers ----
function randomF32(n, seed) {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}

function stats(times) {
  const s = [...times].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
  return { median_ms: q(0.5), p10_ms: q(0.1), p90_ms: q(0.9), reps: s.length };
}

/**
 * Times each of `fns` (name -> function) REPS times in all: 5 warm-up calls
 * each, then ROUNDS rounds in which every function runs reps / ROUNDS times
 * in turn. On a shared machine the speed drifts over seconds; alternating
 * spreads that drift over all libraries instead of charging it to whichever
 * ran during a slow spell.
 */
async function timeAlternating(fns, reps) {
  const names = Object.keys(fns);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (const n of names) for (let i = 0; i < 5; i++) await fns[n]();
  const perRound = Math.max(1, Math.ceil(reps / ROUNDS));
  for (let round = 0; round < ROUNDS; round++) {
    for (const n of names) {
      for (let i = 0; i < perRound; i++) {
        const t0 = performance.now();
        await fns[n]();
        times[n].push(performance.now() - t0);
      }
    }
  }
  return Object.fromEntries(names.map((n) => [n, stats(times[n])]));
}

/** Max relative error of `got` against `want(i)` at indices `idx` (all when null), |g-w| / max(|w|, 1). */
function maxErr(got, want, idx = null) {
  let e = 0;
  const n = idx ? idx.length : got.length;
  for (let k = 0; k < n; k++) {
    const i = idx ? idx[k] : k;
    const w = want(i);
    e = Math.max(e, Math.abs(got[i] - w) / Math.max(Math.abs(w), 1));
  }
  return e;
}

/**
 * Runs `make` in a tf.tidy and reads the tensor it returns. The read happens
 * outside the tidy on purpose: tidy walks whatever its callback returns, and
 * walking a large typed array element by element costs seconds (and at 16M
 * elements exhausts V8: "invalid size"), which would be timed as tfjs's work.
 */
function tfRead(make) {
  const t = tf.tidy(make);
  try {
    return t.dataSync();
  } finally {
    t.dispose();
  }
}

async function ortSession(model) {
  return ort.InferenceSession.create(buildModel(model), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
}

// ---- cases ----
function matmulCase(n) {
  const a = randomF32(n * n, 1);
  const b = randomF32(n * n, 2);
  const rng = randomF32(4096, 3);
  const idx = Array.from({ length: 2048 }, (_, i) => Math.floor(((rng[i] + 1) / 2) * n * n));
  const want = (i) => {
    const r = Math.floor(i / n);
    const c = i % n;
    let s = 0;
    for (let p = 0; p < n; p++) s += a[r * n + p] * b[p * n + c];
    return s;
  };
  return {
    name: `matmul f32 ${n}x${n}x${n}`,
    flops: 2 * n ** 3,
    bytes: 3 * 4 * n * n,
    reps: n >= 1024 ? (quick ? 5 : 30) : quick ? 10 : 100,
    tol: 1e-5 * Math.max(Math.sqrt(n) / 4, 1),
    check: (out) => maxErr(out, want, idx),
    fusegraph: {
      inputs: () => [fg.tensor(a, [n, n]).realize(), fg.tensor(b, [n, n]).realize()],
      e2e: (into) => fg.tidy(() => fg.tensor(a, [n, n]).matmul(fg.tensor(b, [n, n])).toArraySync(into)),
      compute: ([x, y]) => fg.tidy(() => x.matmul(y).realize()),
    },
    tfjs: {
      inputs: () => [tf.tensor2d(a, [n, n]), tf.tensor2d(b, [n, n])],
      e2e: () => tfRead(() => tf.matMul(tf.tensor2d(a, [n, n]), tf.tensor2d(b, [n, n]))),
      compute: ([x, y]) => tf.matMul(x, y),
    },
    ort: {
      model: { inputs: [{ name: 'a', shape: [n, n] }, { name: 'b', shape: [n, n] }], nodes: [{ op: 'MatMul', inputs: ['a', 'b'], output: 'y' }], output: { name: 'y', shape: [n, n] } },
      feeds: () => ({ a: new ort.Tensor('float32', a, [n, n]), b: new ort.Tensor('float32', b, [n, n]) }),
    },
  };
}

function chainCase(n) {
  const a = randomF32(n, 4);
  const b = randomF32(n, 5);
  const c = randomF32(n, 6);
  return {
    name: `relu(a*b+c) f32 ${n / (1 << 20)}M`,
    flops: 3 * n,
    bytes: 16 * n,
    reps: n >= 1 << 24 ? (quick ? 5 : 20) : quick ? 10 : 100,
    tol: 1e-5 * 3,
    check: (out) => maxErr(out, (i) => Math.max(a[i] * b[i] + c[i], 0)),
    fusegraph: {
      inputs: () => [fg.tensor(a).realize(), fg.tensor(b).realize(), fg.tensor(c).realize()],
      e2e: (into) => fg.tidy(() => fg.tensor(a).mul(fg.tensor(b)).add(fg.tensor(c)).relu().toArraySync(into)),
      compute: ([x, y, z]) => fg.tidy(() => x.mul(y).add(z).relu().realize()),
    },
    tfjs: {
      inputs: () => [tf.tensor1d(a), tf.tensor1d(b), tf.tensor1d(c)],
      e2e: () => tfRead(() => tf.relu(tf.add(tf.mul(tf.tensor1d(a), tf.tensor1d(b)), tf.tensor1d(c)))),
      compute: ([x, y, z]) => tf.tidy(() => tf.relu(tf.add(tf.mul(x, y), z))),
    },
    ort: {
      model: {
        inputs: ['a', 'b', 'c'].map((name) => ({ name, shape: [n] })),
        nodes: [
          { op: 'Mul', inputs: ['a', 'b'], output: 'ab' },
          { op: 'Add', inputs: ['ab', 'c'], output: 'abc' },
          { op: 'Relu', inputs: ['abc'], output: 'y' },
        ],
        output: { name: 'y', shape: [n] },
      },
      feeds: () => ({ a: new ort.Tensor('float32', a, [n]), b: new ort.Tensor('float32', b, [n]), c: new ort.Tensor('float32', c, [n]) }),
    },
  };
}

// A transcendental activation on its own (no fusion to gain): the per-element
// cost of each library's tanh.
function tanhCase(n) {
  const x = randomF32(n, 8).map((v) => v * 4);
  return {
    name: `tanh f32 ${n / (1 << 20)}M`,
    flops: n,
    bytes: 8 * n,
    reps: quick ? 10 : 100,
    tol: 1e-6,
    check: (out) => maxErr(out, (i) => Math.tanh(x[i])),
    fusegraph: {
      inputs: () => [fg.tensor(x).realize()],
      e2e: (into) => fg.tidy(() => fg.tensor(x).tanh().toArraySync(into)),
      compute: ([t]) => fg.tidy(() => t.tanh().realize()),
    },
    tfjs: {
      inputs: () => [tf.tensor1d(x)],
      e2e: () => tfRead(() => tf.tanh(tf.tensor1d(x))),
      compute: ([t]) => tf.tanh(t),
    },
    ort: {
      model: { inputs: [{ name: 'x', shape: [n] }], nodes: [{ op: 'Tanh', inputs: ['x'], output: 'y' }], output: { name: 'y', shape: [n] } },
      feeds: () => ({ x: new ort.Tensor('float32', x, [n]) }),
    },
  };
}

function softmaxCase(rows, cols) {
  const x = randomF32(rows * cols, 7).map((v) => v * 8);
  const want = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    let m = -Infinity;
    for (let j = 0; j < cols; j++) m = Math.max(m, x[r * cols + j]);
    let s = 0;
    for (let j = 0; j < cols; j++) s += Math.exp(x[r * cols + j] - m);
    for (let j = 0; j < cols; j++) want[r * cols + j] = Math.exp(x[r * cols + j] - m) / s;
  }
  return {
    name: `softmax f32 (${rows}, ${cols}) last axis`,
    flops: 5 * rows * cols,
    bytes: 8 * rows * cols,
    reps: quick ? 10 : 100,
    tol: 1e-5 * 4 * Math.max(Math.sqrt(cols) / 4, 1),
    check: (out) => maxErr(out, (i) => want[i]),
    fusegraph: {
      inputs: () => [fg.tensor(x, [rows, cols]).realize()],
      e2e: (into) => fg.tidy(() => fg.tensor(x, [rows, cols]).softmax(-1).toArraySync(into)),
      compute: ([t]) => fg.tidy(() => t.softmax(-1).realize()),
    },
    tfjs: {
      inputs: () => [tf.tensor2d(x, [rows, cols])],
      e2e: () => tfRead(() => tf.softmax(tf.tensor2d(x, [rows, cols]))),
      compute: ([t]) => tf.softmax(t),
    },
    ort: {
      model: { inputs: [{ name: 'x', shape: [rows, cols] }], nodes: [{ op: 'Softmax', inputs: ['x'], output: 'y', attrs: { axis: -1 } }], output: { name: 'y', shape: [rows, cols] } },
      feeds: () => ({ x: new ort.Tensor('float32', x, [rows, cols]) }),
    },
  };
}

const allCases = [
  matmulCase(256),
  matmulCase(512),
  matmulCase(1024),
  chainCase(1 << 20),
  chainCase(1 << 22),
  chainCase(1 << 24),
  softmaxCase(1024, 1024),
  softmaxCase(8192, 128),
  tanhCase(1 << 20),
  tanhCase(1 << 22),
];

const cases = only ? allCases.filter((c) => c.name.includes(only)) : allCases;

/** GB/s of one thread copying 64 MiB with TypedArray.set (read + write counted). */
function copyBandwidth() {
  const src = randomF32(1 << 24, 9);
  const dst = new Float32Array(src.length);
  const times = [];
  for (let i = 0; i < 25; i++) {
    const t0 = performance.now();
    dst.set(src);
    times.push(performance.now() - t0);
  }
  return (2 * src.byteLength) / stats(times.slice(5)).median_ms / 1e6;
}
const copyGbps = copyBandwidth();
const simd128Peak = await simd128PeakGflops();
const relaxedPeak = await relaxedMaddPeakGflops();
// The rate fusegraph's matmul kernels can issue in the build it loaded.
const peakGflops = fg.simd === 'relaxed' ? relaxedPeak : simd128Peak;
console.log(
  `fusegraph build: ${fg.simd}; one core: f32x4 mul + add ${simd128Peak.toFixed(1)} GFLOP/s, relaxed_madd ${relaxedPeak === null ? 'n/a (no relaxed SIMD)' : `${relaxedPeak.toFixed(1)} GFLOP/s`}; copy ${copyGbps.toFixed(1)} GB/s`,
);

// ---- run ----
const results = [];
for (const c of cases) {
  const row = { case: c.name, flops: c.flops, tolerance: c.tol };
  // Every library's output is checked first, then all are timed in
  // alternating rounds (timeAlternating).
  const fresh = c.fusegraph.e2e();
  row.fusegraph_check = c.check(fresh);
  // The same read into one array the caller keeps (toArraySync(into)).
  const into = new Float32Array(fresh.length);
  row.fusegraph_into_check = c.check(c.fusegraph.e2e(into));
  const fgIns = c.fusegraph.inputs();
  const fgOut = c.fusegraph.compute(fgIns);
  row.fusegraph_compute_check = c.check(fgOut.toArraySync());
  fgOut.dispose();
  row.tfjs_check = c.check(c.tfjs.e2e());
  const tfIns = c.tfjs.inputs();
  const session = await ortSession(c.ort.model);
  const run = async () => (await session.run(c.ort.feeds())).y.data;
  row.ort_check = c.check(await run());
  const t = await timeAlternating(
    {
      fusegraph_e2e: () => c.fusegraph.e2e(),
      fusegraph_e2e_into: () => c.fusegraph.e2e(into),
      fusegraph_compute: () => c.fusegraph.compute(fgIns).dispose(),
      tfjs_e2e: c.tfjs.e2e,
      tfjs_compute: () => c.tfjs.compute(tfIns).dispose(),
      ort_e2e: run,
    },
    c.reps,
  );
  Object.assign(row, t);
  fgIns.forEach((x) => x.dispose());
  tfIns.forEach((x) => x.dispose());
  await session.release();

  row.ok = [row.fusegraph_check, row.fusegraph_into_check, row.fusegraph_compute_check, row.tfjs_check, row.ort_check].every((e) => e <= c.tol);
  row.ratio_vs_tfjs_e2e = row.tfjs_e2e.median_ms / row.fusegraph_e2e.median_ms;
  row.ratio_vs_tfjs_compute = row.tfjs_compute.median_ms / row.fusegraph_compute.median_ms;
  row.ratio_vs_ort_e2e = row.ort_e2e.median_ms / row.fusegraph_e2e.median_ms;
  // Not a like-for-like ratio: tfjs's dataSync() always allocates. Shown
  // because a caller reading frame after frame can keep one array.
  row.ratio_vs_tfjs_e2e_into = row.tfjs_e2e.median_ms / row.fusegraph_e2e_into.median_ms;
  row.fusegraph_gflops_compute = c.flops / row.fusegraph_compute.median_ms / 1e6;
  row.fusegraph_gbps_compute = c.bytes / row.fusegraph_compute.median_ms / 1e6;
  // The issue's targets: at least 1.5x tfjs-backend-wasm and 1.0x onnxruntime-web.
  row.meets_target_vs_tfjs = row.ratio_vs_tfjs_e2e >= 1.5 && row.ratio_vs_tfjs_compute >= 1.5;
  row.meets_target_vs_ort = row.ratio_vs_ort_e2e >= 1.0;
  row.roofline_fraction = c.name.startsWith('matmul') ? row.fusegraph_gflops_compute / peakGflops : row.fusegraph_gbps_compute / copyGbps;
  results.push(row);
  const f = (s) => s.median_ms.toFixed(3).padStart(9);
  console.log(
    `${c.name.padEnd(34)} fg e2e ${f(row.fusegraph_e2e)} into ${f(row.fusegraph_e2e_into)} compute ${f(row.fusegraph_compute)} | tfjs e2e ${f(row.tfjs_e2e)} compute ${f(row.tfjs_compute)} | ort e2e ${f(row.ort_e2e)} ms | ` +
      `x tfjs ${row.ratio_vs_tfjs_e2e.toFixed(2)}/${row.ratio_vs_tfjs_compute.toFixed(2)} x ort ${row.ratio_vs_ort_e2e.toFixed(2)} | ${row.fusegraph_gflops_compute.toFixed(1)} GFLOP/s ${row.ok ? 'ok' : 'CHECK FAILED'}`,
  );
}

// Read from node_modules directly: not every package exports its package.json.
const version = (p) => JSON.parse(readFileSync(new URL(`./node_modules/${p}/package.json`, import.meta.url), 'utf8')).version;
const out = {
  suite: 'wasm',
  note: `Node, one thread each, ${fg.simd === 'relaxed' ? "relaxed SIMD available (fusegraph: its relaxed-SIMD build, matmul on f32x4.relaxed_madd; the peers' own builds)" : 'SIMD128'}. ratio = peer median / fusegraph median (above 1: fusegraph faster). e2e = typed arrays in, a fresh typed array out; e2e_into = the same with the output read into one array the caller reuses (toArraySync(into); tfjs has no such read, so ratio_vs_tfjs_e2e_into is not like for like); compute = inputs resident, result left in the library. roofline_fraction: matmul GFLOP/s over the measured one-core f32x4 mul+add rate (relaxed_madd rate with fusegraph's relaxed build), others GB/s over the measured one-thread copy bandwidth.`,
  quick,
  date: new Date().toISOString(),
  machine: {
    cpu: os.cpus()[0]?.model,
    cores: os.cpus().length,
    memory_gib: +(os.totalmem() / 2 ** 30).toFixed(1),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    node_flags: process.execArgv,
    v8: process.versions.v8,
    cpu_mhz: os.cpus()[0]?.speed ?? null,
    measured_simd128_mul_add_gflops_one_core: +simd128Peak.toFixed(2),
    measured_relaxed_madd_gflops_one_core: relaxedPeak === null ? null : +relaxedPeak.toFixed(2),
    copy_bandwidth_gbps_one_thread: +copyGbps.toFixed(2),
    loadavg_end: os.loadavg(),
  },
  versions: {
    fusegraph: version('fusegraph'),
    fusegraph_simd: fg.simd,
    '@tensorflow/tfjs-core': version('@tensorflow/tfjs-core'),
    '@tensorflow/tfjs-backend-wasm': version('@tensorflow/tfjs-backend-wasm'),
    'onnxruntime-web': version('onnxruntime-web'),
    tfjs_backend: tf.getBackend(),
  },
  results,
};
// Partial runs (--quick, --only) do not overwrite the recorded results.
const file = fg.simd === 'relaxed' ? 'wasm_relaxed.json' : 'wasm.json';
const path = only || quick ? new URL(`file://${os.tmpdir()}/fusegraph-${file.replace('.json', '')}-bench.json`) : new URL(`../results/${file}`, import.meta.url);
writeFileSync(path, JSON.stringify(out, null, 2) + '\n');
console.log(`wrote ${path.pathname}`);
if (!results.every((r) => r.ok)) process.exit(1);
