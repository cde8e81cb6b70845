// fg.image: images as u8 tensors [height, width, channels] (1 grey, 3 RGB,
// 4 RGBA). Decode/encode JPEG, PNG and WebP (WebP is written lossless),
// resize, blur, sharpen, crop, flip, rotate, colour adjustments — each op
// returns a new lazy image tensor; colour ops fuse with the final clamp and
// cast into one kernel. `transform` runs a whole request in one call.
// Options are checked here (FG_INVALID_ARGUMENT) and again in Rust.
//
// The codecs live in the image builds only (dist/image/ and
// dist/image-webgpu/, loaded by init({ image: true }) or the
// `fusegraph/image` entry points), which keeps
// them out of the core-ops builds' size budget. In the other builds every
// method throws FG_NOT_IN_BUILD saying how to load it.

import { raw, build } from './wasm.js';
import { FusegraphError, guard, invalid, show } from './errors.js';
import { Tensor } from './api.js';

const FILTERS = ['lanczos3', 'bilinear', 'nearest'];
const FORMATS = ['jpeg', 'png', 'webp'];
const DEFAULT_LIMITS = { maxPixels: 25_000_000, maxSide: 8192 };

function bytesOf(op, data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw invalid(`${op}: expects the file's bytes (Uint8Array or ArrayBuffer), got ${data === null ? 'null' : typeof data}`);
}

function handleOf(op, img) {
  if (!(img instanceof Tensor)) throw invalid(`${op}: expects an image Tensor (from fg.image.decode), got ${typeof img}`);
  return img._handle();
}

function int(op, what, v, { min = 0, optional = false } = {}) {
  if (v === undefined && optional) return undefined;
  if (!Number.isSafeInteger(v) || v < min || v > 0xffff_ffff) {
    throw invalid(`${op}: ${what} must be an integer >= ${min}, got ${String(v)}`);
  }
  return v;
}

function num(op, what, v, fallback) {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`${op}: ${what} must be a finite number, got ${String(v)}`);
  return v;
}

function oneOf(op, what, v, allowed, fallback) {
  if (v === undefined) return fallback;
  if (typeof v === 'string' && v.toLowerCase() === 'jpg' && allowed === FORMATS) return 'jpeg';
  if (!allowed.includes(v)) throw invalid(`${op}: ${what} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${show(v)}`);
  return v;
}

function limitsOf(op, o) {
  return [
    int(op, 'maxPixels', o.maxPixels ?? DEFAULT_LIMITS.maxPixels, { min: 1 }),
    int(op, 'maxSide', o.maxSide ?? DEFAULT_LIMITS.maxSide, { min: 1 }),
  ];
}

function optionsOf(op, o) {
  if (o === undefined) return {};
  if (o === null || typeof o !== 'object') throw invalid(`${op}: options must be an object, got ${o === null ? 'null' : typeof o}`);
  return o;
}

function op(img, name, f) {
  const h = handleOf(`image.${name}`, img);
  return new Tensor(guard(() => f(h)));
}

const methods = {
  /** Header only: `{ width, height, format }`. */
  probe(bytes) {
    const b = bytesOf('image.probe', bytes);
    return guard(() => raw.imageProbe(b));
  },

  /** Decodes to a u8 [H, W, C] tensor; refuses headers over maxPixels/maxSide before allocating. */
  decode(bytes, options) {
    const b = bytesOf('image.decode', bytes);
    const [maxPixels, maxSide] = limitsOf('image.decode', optionsOf('image.decode', options));
    return new Tensor(guard(() => raw.imageDecode(b, maxPixels, maxSide)));
  },

  /** Encodes to a Uint8Array. quality (1..100) applies to JPEG. */
  encode(img, options) {
    const o = optionsOf('image.encode', options);
    const format = oneOf('image.encode', 'format', o.format, FORMATS, 'jpeg');
    const quality = int('image.encode', 'quality', o.quality ?? 80, { min: 1 });
    const h = handleOf('image.encode', img);
    return guard(() => raw.imageEncode(h, format, quality));
  },

  resize(img, options) {
    const o = optionsOf('image.resize', options);
    const width = int('image.resize', 'width', o.width, { min: 1, optional: true });
    const height = int('image.resize', 'height', o.height, { min: 1, optional: true });
    if (width === undefined && height === undefined) throw invalid('image.resize: give width, height or both');
    const filter = oneOf('image.resize', 'filter', o.filter, FILTERS, 'lanczos3');
    return op(img, 'resize', (h) => raw.imageResize(h, width ?? 0, height ?? 0, filter));
  },

  blur(img, sigma) {
    const s = num('image.blur', 'sigma', sigma);
    return op(img, 'blur', (h) => raw.imageBlur(h, s));
  },

  sharpen(img, amount, sigma = 1.0) {
    const a = num('image.sharpen', 'amount', amount);
    const s = num('image.sharpen', 'sigma', sigma);
    return op(img, 'sharpen', (h) => raw.imageSharpen(h, a, s));
  },

  crop(img, x, y, w, h) {
    const args = [['x', x, 0], ['y', y, 0], ['w', w, 1], ['h', h, 1]].map(([n, v, min]) => int('image.crop', n, v, { min }));
    return op(img, 'crop', (t) => raw.imageCrop(t, ...args));
  },

  flip(img, axis) {
    const a = oneOf('image.flip', 'axis', axis, ['h', 'v']);
    return op(img, 'flip', (h) => raw.imageFlip(h, a));
  },

  /** k quarter turns clockwise (negative: counter-clockwise). */
  rotate90(img, k = 1) {
    if (!Number.isSafeInteger(k)) throw invalid(`image.rotate90: k must be an integer, got ${String(k)}`);
    return op(img, 'rotate90', (h) => raw.imageRotate90(h, ((k % 4) + 4) % 4));
  },

  /** Factors where 1 changes nothing; one fused kernel. */
  adjust(img, options) {
    const o = optionsOf('image.adjust', options);
    const [b, c, s, g] = ['brightness', 'contrast', 'saturation', 'gamma'].map((k) => num('image.adjust', k, o[k], 1));
    return op(img, 'adjust', (h) => raw.imageAdjust(h, b, c, s, g));
  },

  grayscale(img) {
    return op(img, 'grayscale', (h) => raw.imageGrayscale(h));
  },

  /** A 3x3 (RGB/RGBA) or 1x1 (grey) row-major matrix and one offset per row, in 0..255 units. */
  colourMatrix(img, matrix, offset) {
    const m = Float64Array.from(matrix ?? [], Number);
    const b = Float64Array.from(offset ?? new Array(Math.round(Math.sqrt(m.length))).fill(0), Number);
    return op(img, 'colourMatrix', (h) => raw.imageColourMatrix(h, m, b));
  },

  /**
   * decode → resize → blur → sharpen → encode in one call (the hot path of
   * an image server). Returns { bytes, width, height, format, timings } (ms).
   */
  transform(bytes, options) {
    const b = bytesOf('image.transform', bytes);
    const o = optionsOf('image.transform', options);
    const width = int('image.transform', 'width', o.width, { min: 1, optional: true });
    const height = int('image.transform', 'height', o.height, { min: 1, optional: true });
    const filter = oneOf('image.transform', 'filter', o.filter, FILTERS, 'lanczos3');
    const format = oneOf('image.transform', 'format', o.format, FORMATS, '');
    const quality = int('image.transform', 'quality', o.quality ?? 80, { min: 1 });
    const blur = num('image.transform', 'blur', o.blur, 0);
    const sharpen = num('image.transform', 'sharpen', o.sharpen, 0);
    const sharpenSigma = num('image.transform', 'sharpenSigma', o.sharpenSigma, 1);
    const [maxPixels, maxSide] = limitsOf('image.transform', o);
    return guard(() => raw.imageTransform(b, width ?? 0, height ?? 0, filter, format, quality, blur, sharpen, sharpenSigma, maxPixels, maxSide));
  },
};

function requireImageBuild(name) {
  if (!build?.startsWith('image')) {
    throw new FusegraphError(
      'FG_NOT_IN_BUILD',
      `image.${name}: the ${build ?? 'no'} build is loaded, and only the image build has the image codecs and ops: call init({ image: true }) first, or import init from 'fusegraph/image'`,
    );
  }
}

export const image = Object.freeze(
  Object.fromEntries(
    Object.entries(methods).map(([name, f]) => [
      name,
      (...args) => {
        requireImageBuild(name);
        return f(...args);
      },
    ]),
  ),
);
