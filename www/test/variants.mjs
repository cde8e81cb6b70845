// The load test's request mix: ~1000 distinct /img URLs over the shipped
// photos as clients would spell them, ranked in a seeded random order and
// drawn with a Zipf law (rank r with weight 1/r^s), like real traffic: a few
// hot URLs, a long tail.
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

/**
 * The canonical variants the load test's traffic maps onto: every width the
 * endpoint makes for each photo, at the default quality 80 and at 60, plus
 * a sharpened 640 px copy of each photo.
 */
export function canonicalVariants() {
  const out = [];
  for (const img of manifest().images) {
    for (const w of widthsFor(img.width)) for (const q of [80, 60]) out.push({ name: img.name, w, q, sharpen: 0 });
    const w640 = widthsFor(img.width).find((w) => w >= 640) ?? img.width;
    out.push({ name: img.name, w: w640, q: 80, sharpen: 1 });
  }
  return out;
}

const canonicalUrl = (v) => `/img/${v.name}?blur=0&fmt=jpeg&q=${v.q}&sharpen=${v.sharpen}&w=${v.w}`;

/**
 * About 1000 distinct URLs as clients spell them (`count`), each one a
 * variant of canonicalVariants(): widths anywhere in the range that snaps to
 * the variant's width, quality spelled 78..82 or left out for 80,
 * `fmt=jpg`/`jpeg`/absent, defaults written out or not, parameters in any
 * order. A request for one is a cache hit only if the worker canonicalises
 * it to the key that the warm-up filled. Ranked in a seeded random order.
 */
export function variants({ count = 1000, seed = 7 } = {}) {
  const r = rng(seed);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const canon = canonicalVariants();
  const prevWidth = (v) => {
    const ws = widthsFor(manifest().images.find((i) => i.name === v.name).width);
    const at = ws.indexOf(v.w);
    return at > 0 ? ws[at - 1] : 0;
  };
  const out = new Map(); // url -> canonical url
  let guard = 0;
  while (out.size < count && guard < count * 100) {
    guard += 1;
    const v = canon[Math.floor(r() * canon.length)];
    const lo = prevWidth(v);
    const parts = [`w=${lo + 1 + Math.floor(r() * (v.w - lo))}`];
    if (v.q === 80) {
      const q = pick([null, 78, 79, 80, 81, 82]);
      if (q !== null) parts.push(`q=${q}`);
    } else {
      parts.push(`q=${pick([58, 59, 60, 61, 62])}`);
    }
    const fmt = pick([null, 'jpeg', 'jpg']);
    if (fmt) parts.push(`fmt=${fmt}`);
    if (r() < 0.3) parts.push(`blur=${pick(['0', '0.0', '0.2'])}`);
    if (v.sharpen) parts.push(`sharpen=${pick(['1', '1.0', '0.9', '1.1'])}`);
    else if (r() < 0.3) parts.push('sharpen=0');
    for (let i = parts.length - 1; i > 0; i -= 1) {
      const j = Math.floor(r() * (i + 1));
      [parts[i], parts[j]] = [parts[j], parts[i]];
    }
    out.set(`/img/${v.name}?${parts.join('&')}`, canonicalUrl(v));
  }
  const urls = [...out.keys()];
  for (let i = urls.length - 1; i > 0; i -= 1) {
    const j = Math.floor(r() * (i + 1));
    [urls[i], urls[j]] = [urls[j], urls[i]];
  }
  return { urls, canonical: canon.map(canonicalUrl), canonicalOf: out };
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
