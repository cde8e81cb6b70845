// Parses and canonicalises the image endpoint's query: every parameter is
// checked (400 with a message naming it), snapped to its step, and written
// back in one sorted form. Two URLs that would give the same bytes give the
// same canonical string, and the set of canonical strings per image is
// finite, so the cache can be neither busted nor poisoned from the query.
import { badRequest } from './http.js';
import {
  BLUR_STEP, DEFAULT_QUALITY, FORMATS, MAX_BLUR, MAX_SHARPEN, MAX_SIDE, QUALITY_STEP, SHARPEN_STEP, WIDTHS,
} from './limits.js';

const KNOWN = new Set(['w', 'q', 'fmt', 'blur', 'sharpen']);
const INTEGER = /^[0-9]{1,5}$/;
const DECIMAL = /^[0-9]{1,3}(?:\.[0-9]{1,3})?$/;
const LOSSLESS = new Set(['png', 'webp']);
const FORMAT_ALIASES = { jpg: 'jpeg', jpeg: 'jpeg', png: 'png', webp: 'webp' };

/**
 * `search` is a URLSearchParams. Returns the requested values, not yet
 * snapped to a source size: `{ w: number|null, q, fmt, blur, sharpen }`.
 */
export function parseParams(search) {
  const seen = new Map();
  for (const [key, value] of search) {
    if (!KNOWN.has(key)) throw badRequest(`unknown parameter ${JSON.stringify(key.slice(0, 32))} (known: w, q, fmt, blur, sharpen)`);
    if (seen.has(key)) throw badRequest(`parameter ${key} given more than once`);
    seen.set(key, value);
  }
  const w = seen.has('w') ? integer('w', seen.get('w'), 1, MAX_SIDE) : null;
  const q = seen.has('q') ? integer('q', seen.get('q'), 1, 100) : DEFAULT_QUALITY;
  let fmt = 'jpeg';
  if (seen.has('fmt')) {
    fmt = FORMAT_ALIASES[seen.get('fmt')];
    if (!fmt) throw badRequest(`fmt must be one of ${FORMATS.join(', ')} (or jpg), got ${JSON.stringify(seen.get('fmt').slice(0, 32))}`);
  }
  const blur = seen.has('blur') ? decimal('blur', seen.get('blur'), 0, MAX_BLUR) : 0;
  const sharpen = seen.has('sharpen') ? decimal('sharpen', seen.get('sharpen'), 0, MAX_SHARPEN) : 0;
  return { w, q, fmt, blur, sharpen };
}

function integer(name, raw, min, max) {
  if (!INTEGER.test(raw)) throw badRequest(`${name} must be an integer in ${min}..${max}, got ${JSON.stringify(raw.slice(0, 32))}`);
  const v = Number(raw);
  if (v < min || v > max) throw badRequest(`${name} must be an integer in ${min}..${max}, got ${v}`);
  return v;
}

function decimal(name, raw, min, max) {
  if (!DECIMAL.test(raw)) throw badRequest(`${name} must be a number in ${min}..${max}, got ${JSON.stringify(raw.slice(0, 32))}`);
  const v = Number(raw);
  if (v < min || v > max) throw badRequest(`${name} must be a number in ${min}..${max}, got ${v}`);
  return v;
}

const snapTo = (v, step) => Math.round(v / step) * step;

/** The width the endpoint makes for a requested width and a source width. */
export function snapWidth(requested, sourceWidth) {
  if (requested === null) return Math.min(sourceWidth, WIDTHS[WIDTHS.length - 1]);
  const up = WIDTHS.find((w) => w >= requested) ?? WIDTHS[WIDTHS.length - 1];
  return Math.min(up, sourceWidth);
}

/** Every width the endpoint makes for a source width (for srcset). */
export function widthsFor(sourceWidth) {
  return [...new Set(WIDTHS.map((w) => Math.min(w, sourceWidth)))];
}

/**
 * The snapped parameters for a source of `sourceWidth` pixels across:
 * `{ w, q, fmt, blur, sharpen }`, q 0 for PNG and WebP (fusegraph encodes both
 * losslessly, so quality changes nothing and must not split the cache).
 */
export function canonicalParams(p, sourceWidth) {
  return {
    blur: snapTo(p.blur, BLUR_STEP),
    fmt: p.fmt,
    q: LOSSLESS.has(p.fmt) ? 0 : Math.max(QUALITY_STEP, snapTo(p.q, QUALITY_STEP)),
    sharpen: snapTo(p.sharpen, SHARPEN_STEP),
    w: snapWidth(p.w, sourceWidth),
  };
}

/** `blur=..&fmt=..&q=..&sharpen=..&w=..`: keys sorted, every one present. */
export function canonicalQuery(c) {
  return Object.keys(c)
    .sort()
    .map((k) => `${k}=${c[k]}`)
    .join('&');
}
