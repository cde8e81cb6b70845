// The one module that calls fusegraph's image API (fg.image.*, see
// wasm/npm/src/image.js): probe a header, and transform bytes in one call.
// Its errors become HTTP errors here: FG_IMAGE_DECODE 422,
// FG_IMAGE_TOO_LARGE 413, FG_INVALID_ARGUMENT 400. Anything else (FG_PANIC
// would be a bug) is rethrown and answered as an internal error.
import { init } from 'fusegraph/image';
import { HttpError } from './http.js';
import { MAX_PIXELS, MAX_SIDE, MAX_WORK } from './limits.js';

let fgPromise = null;
let fgLoaded = null;

async function fusegraph() {
  fgPromise ??= init({ backend: 'cpu' });
  fgPromise.catch(() => {
    fgPromise = null;
  });
  const fg = await fgPromise;
  fgLoaded = fg;
  if (!fg.image) throw new HttpError(503, 'this build of fusegraph has no image API', { 'Retry-After': '60' });
  return fg;
}

const STATUS = { FG_IMAGE_DECODE: 422, FG_IMAGE_TOO_LARGE: 413, FG_INVALID_ARGUMENT: 400 };

function mapped(e) {
  const status = STATUS[e?.code];
  return status ? new HttpError(status, e.message) : e;
}

/** The fusegraph instance's wasm linear memory in bytes (null before the first image request). */
export function wasmMemoryBytes() {
  return fgLoaded ? fgLoaded.wasmMemoryBytes() : null;
}

/** `{ width, height, format }` from the header of `bytes`, no decoding. */
export async function probe(bytes) {
  const fg = await fusegraph();
  try {
    return await fg.image.probe(bytes);
  } catch (e) {
    throw mapped(e);
  }
}

/** Output height for a width, keeping the source's aspect ratio. */
export function outputHeight(src, width) {
  return Math.max(1, Math.round((src.height * width) / src.width));
}

/** Refuses (413) sources over the pixel limits and work over the budget, before decoding. */
export function checkBudget(src, c) {
  if (src.width > MAX_SIDE || src.height > MAX_SIDE) {
    throw new HttpError(413, `image is ${src.width}x${src.height}; at most ${MAX_SIDE} pixels a side are accepted`);
  }
  if (src.width * src.height > MAX_PIXELS) {
    throw new HttpError(413, `image is ${src.width}x${src.height} (${src.width * src.height} pixels); at most ${MAX_PIXELS} are accepted`);
  }
  const out = c.w * outputHeight(src, c.w);
  const taps = (sigma) => 2 * (2 * Math.ceil(3 * sigma) + 1); // separable Gaussian, two passes
  const work = src.width * src.height + out * ((c.blur ? taps(c.blur) : 0) + (c.sharpen ? taps(1) : 0));
  if (work > MAX_WORK) {
    throw new HttpError(413, `this transform needs about ${work} pixel operations; the budget is ${MAX_WORK}`);
  }
}

/**
 * Runs decode → resize → blur/sharpen → encode on `bytes` with canonical
 * parameters `c`. Resolves to `{ bytes, width, height, format, timings }`.
 */
export async function transform(bytes, c) {
  const fg = await fusegraph();
  try {
    return await fg.image.transform(bytes, {
      width: c.w,
      quality: c.q || undefined,
      format: c.fmt,
      blur: c.blur || undefined,
      sharpen: c.sharpen || undefined,
      maxPixels: MAX_PIXELS,
      maxSide: MAX_SIDE,
    });
  } catch (e) {
    throw mapped(e);
  }
}
