// fusegraph's matmul alone, for an A/B of its two CPU builds on a noisy
// machine: run it once with and once without relaxed SIMD, back to back
// (`node mm_ab.mjs` and `node --experimental-wasm-relaxed-simd mm_ab.mjs`);
// prints the build, the one-core peaks of peak.mjs, then per size the
// median and the best of REPS compute times (inputs resident) and GFLOP/s.
import { init } from 'fusegraph';
import { simd128PeakGflops, relaxedMaddPeakGflops } from './peak.mjs';

const fg = await init({ backend: 'cpu' });
const REPS = { 256: 60, 512: 30, 1024: 12 };
const rand = (n, seed) => {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1);
};
const out = { simd: fg.simd, peak_mul_add: await simd128PeakGflops(), peak_relaxed_madd: await relaxedMaddPeakGflops(), sizes: {} };
for (const n of [256, 512, 1024]) {
  const a = fg.tensor(rand(n * n, 1), [n, n]).realize();
  const b = fg.tensor(rand(n * n, 2), [n, n]).realize();
  for (let i = 0; i < 3; i++) a.matmul(b).realize().dispose();
  const t = [];
  for (let i = 0; i < REPS[n]; i++) {
    const t0 = performance.now();
    a.matmul(b).realize().dispose();
    t.push(performance.now() - t0);
  }
  t.sort((x, y) => x - y);
  const gf = (ms) => +((2 * n ** 3) / ms / 1e6).toFixed(1);
  const median = t[t.length >> 1];
  out.sizes[n] = { median_ms: +median.toFixed(3), best_ms: +t[0].toFixed(3), gflops_median: gf(median), gflops_best: gf(t[0]) };
}
console.log(JSON.stringify(out));
