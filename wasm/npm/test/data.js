// Test inputs, shared by the Node tests and the browser page (so no Node
// modules here): seeded values that are exact in f32.

/** Seeded values in [-scale, scale), exactly representable in f32. */
export function randomF32(n, seed, scale = 1) {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // mulberry32
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const u = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    out[i] = (u * 2 - 1) * scale;
  }
  return out;
}
