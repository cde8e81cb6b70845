// The load test's request mix: ~1000 distinct /img URLs over the shipped
// photos, ranked in a seeded random order and drawn with a Zipf law
// (rank r with weight 1/r^s), like real traffic: a few hot URLs, a long tail.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { widthsFor } from '../src/params.js';

const www = join(dirname(fileURLToPath(import.meta.url)), '..');

/** A small seeded PRNG (mulberry32): the same run draws the same sequence. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function manifest() {
  return JSON.parse(readFileSync(join(www, 'dist', 'manifest.json'), 'utf8'));
}

/** Every combination of image, width, quality, blur and sharpen: about 1000 URLs. */
export function variants({ seed = 7 } = {}) {
  const out = [];
  for (const img of manifest().images) {
    for (const w of widthsFor(img.width)) {
      for (const q of [50, 60, 70, 80, 90]) {
        for (const blur of [0, 1]) {
          for (const sharpen of [0, 1]) out.push(`/img/${img.name}?w=${w}&q=${q}&blur=${blur}&sharpen=${sharpen}`);
        }
      }
    }
  }
  const r = rng(seed); // shuffle, so popularity does not follow image order
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** A sampler of indices 0..n-1 with P(i) proportional to 1/(i+1)^s. */
export function zipf(n, s, random) {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i += 1) {
    sum += 1 / (i + 1) ** s;
    cdf[i] = sum;
  }
  return () => {
    const x = random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
