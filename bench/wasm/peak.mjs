// The f32 SIMD rate one core sustains here, measured: a tiny wasm module
// (bytes written below, no toolchain) runs 12 independent chains of
// `acc = acc * m + c` on f32x4 values, so neither latency nor memory limits
// it. Matmul GFLOP/s are reported as a fraction of this. SIMD128 has no
// fused multiply-add, so f32x4 mul + add is the best a kernel can issue
// there; relaxed SIMD (behind --experimental-wasm-relaxed-simd in Node 20)
// adds f32x4.relaxed_madd, which V8 turns into an FMA where the CPU has one:
// the second rate, measured with the same module and that one instruction.

const CHAINS = 12; // 12 accumulators + 2 constants fit x64's 16 vector registers

const leb = (n) => {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};
const f32 = (x) => [...new Uint8Array(new Float32Array([x]).buffer)];
const section = (id, bytes) => [id, ...leb(bytes.length), ...bytes];
const SIMD = 0xfd;
const op = {
  splat: [SIMD, ...leb(0x13)],
  add: [SIMD, ...leb(0xe4)],
  mul: [SIMD, ...leb(0xe6)],
  relaxedMadd: [SIMD, ...leb(0x105)], // a * b + c, fused or not
  lane0: [SIMD, ...leb(0x1f), 0],
};

/** The module; `relaxed`: one f32x4.relaxed_madd per chain step instead of mul, add. */
function moduleBytes(relaxed = false) {
  const M = CHAINS + 1; // local index of the multiplier
  const C = CHAINS + 2; // of the addend
  const body = [];
  body.push(0x43, ...f32(0.9999), ...op.splat, 0x21, M);
  body.push(0x43, ...f32(0.0001), ...op.splat, 0x21, C);
  for (let i = 1; i <= CHAINS; i++) body.push(0x43, ...f32(1 + i / 64), ...op.splat, 0x21, i);
  body.push(0x03, 0x40); // loop
  for (let i = 1; i <= CHAINS; i++) {
    if (relaxed) body.push(0x20, i, 0x20, M, 0x20, C, ...op.relaxedMadd, 0x21, i);
    else body.push(0x20, i, 0x20, M, ...op.mul, 0x20, C, ...op.add, 0x21, i);
  }
  body.push(0x20, 0, 0x41, 1, 0x6b, 0x22, 0, 0x0d, 0, 0x0b); // n -= 1; br_if n; end
  body.push(0x20, 1);
  for (let i = 2; i <= CHAINS; i++) body.push(0x20, i, ...op.add);
  body.push(...op.lane0, 0x0b);
  const locals = [1, ...leb(CHAINS + 2), 0x7b];
  const func = [...locals, ...body];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7d]),
    ...section(3, [1, 0]),
    ...section(7, [1, 3, ...new TextEncoder().encode('run'), 0x00, 0]),
    ...section(10, [1, ...leb(func.length), ...func]),
  ]);
}

/** GFLOP/s of f32x4 mul + add on one core: the best of 7 timed runs. */
export async function simd128PeakGflops() {
  return peak(moduleBytes());
}

/**
 * GFLOP/s of f32x4.relaxed_madd on one core (a madd counted as 2 flops per
 * lane, as mul + add): the best of 7 timed runs; null where this runtime
 * has no relaxed SIMD.
 */
export async function relaxedMaddPeakGflops() {
  const bytes = moduleBytes(true);
  return WebAssembly.validate(bytes) ? peak(bytes) : null;
}

async function peak(bytes) {
  const { instance } = await WebAssembly.instantiate(bytes);
  const run = instance.exports.run;
  const iters = 2_000_000;
  const flops = iters * CHAINS * 8; // 4 lanes x (mul + add) per chain per iteration
  // V8 first runs wasm in its baseline compiler; many short calls make the
  // function hot, and the optimised code replaces it for later calls.
  for (let i = 0; i < 200; i++) run(10_000);
  await new Promise((r) => setTimeout(r, 200));
  let best = Infinity;
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    run(iters);
    best = Math.min(best, performance.now() - t0);
  }
  return flops / best / 1e6;
}

// `node peak.mjs` prints both rates (the relaxed one needs relaxed SIMD:
// `node --experimental-wasm-relaxed-simd peak.mjs` on Node 20).
if (import.meta.url === `file://${process.argv[1]}`) {
  const simd128 = await simd128PeakGflops();
  const relaxed = await relaxedMaddPeakGflops();
  console.log(`f32x4 mul + add: ${simd128.toFixed(1)} GFLOP/s`);
  console.log(relaxed === null ? 'f32x4.relaxed_madd: no relaxed SIMD in this runtime' : `f32x4.relaxed_madd: ${relaxed.toFixed(1)} GFLOP/s (${(relaxed / simd128).toFixed(2)}x)`);
}
