// fg.image against a JS f64 reference on a real photo, the transform call,
// and the error codes for corrupt files, decompression bombs and bad options.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { init, FusegraphError } from 'fusegraph/image';

const fg = await init({ backend: 'cpu' });
const photo = (name) => new Uint8Array(readFileSync(new URL(`../../../www/images/${name}`, import.meta.url)));

function throwsCode(what, fn, code) {
  let err;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof FusegraphError, `${what}: ${err} is not a FusegraphError`);
  assert.equal(err.code, code, `${what}: code ${err.code}, message ${err.message}`);
}

const sinc = (x) => (x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x));
const lanczos3 = (x) => (Math.abs(x) < 3 ? sinc(x) * sinc(x / 3) : 0);

/** Per-output weights over every input sample, kernel stretched on downscale, renormalised. */
function weights(nIn, nOut, kernel) {
  const scale = nIn / nOut;
  const stretch = Math.max(scale, 1);
  const rows = [];
  for (let i = 0; i < nOut; i++) {
    const center = (i + 0.5) * scale;
    const row = [];
    let sum = 0;
    for (let x = 0; x < nIn; x++) {
      const w = kernel((x + 0.5 - center) / stretch);
      if (w !== 0) {
        row.push([x, w]);
        sum += w;
      }
    }
    rows.push(row.map(([x, w]) => [x, w / sum]));
  }
  return rows;
}

function refResize(px, h, w, c, oh, ow) {
  const rw = weights(h, oh, lanczos3);
  const cw = weights(w, ow, lanczos3);
  const mid = new Float64Array(oh * w * c);
  for (let y = 0; y < oh; y++) for (const [sy, wy] of rw[y]) for (let i = 0; i < w * c; i++) mid[y * w * c + i] += wy * px[sy * w * c + i];
  const out = new Float64Array(oh * ow * c);
  for (let y = 0; y < oh; y++) for (let x = 0; x < ow; x++) for (const [sx, wx] of cw[x]) for (let ch = 0; ch < c; ch++) out[(y * ow + x) * c + ch] += wx * mid[(y * w + sx) * c + ch];
  return out;
}

const round = (v) => Math.min(255, Math.floor(Math.min(255, Math.max(0, v)) + 0.5));

function maxDiff(got, want) {
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - round(want[i])));
  return worst;
}

test('probe reads the header; decode gives u8 HWC', () => {
  assert.deepEqual(fg.image.probe(photo('coffee.jpg')), { width: 600, height: 400, format: 'jpeg' });
  assert.deepEqual(fg.image.probe(photo('chelsea.webp')), { width: 451, height: 300, format: 'webp' });
  const img = fg.image.decode(photo('chelsea.png'));
  assert.deepEqual(img.shape, [300, 451, 3]);
  assert.equal(img.dtype, 'u8');
});

test('lanczos3 resize of a photo matches the f64 reference within 1', async () => {
  const img = fg.image.decode(photo('chelsea.png'));
  const px = await img.toArray();
  const out = fg.image.resize(img, { width: 150 });
  assert.deepEqual(out.shape, [100, 150, 3]);
  const d = maxDiff(await out.toArray(), refResize(px, 300, 451, 3, 100, 150));
  assert.ok(d <= 1, `max |got - ref| = ${d}`);
  // RGBA (alpha a gradient) and grey take their own column loops; an upscale too.
  const rgba = new Uint8Array(300 * 451 * 4);
  const grey = new Uint8Array(300 * 451);
  for (let p = 0; p < 300 * 451; p++) {
    rgba.set([px[3 * p], px[3 * p + 1], px[3 * p + 2], p % 251], 4 * p);
    grey[p] = px[3 * p + 1];
  }
  for (const [data, c, oh, ow] of [[rgba, 4, 100, 150], [grey, 1, 100, 150], [rgba, 4, 420, 631]]) {
    const got = fg.image.resize(fg.tensor(data, [300, 451, c]), { width: ow });
    assert.deepEqual(got.shape, [oh, ow, c]);
    const dc = maxDiff(await got.toArray(), refResize(data, 300, 451, c, oh, ow));
    assert.ok(dc <= 1, `${c} channels to ${ow} wide: max |got - ref| = ${dc}`);
  }
});

test('adjust matches the per-pixel formula; crop/flip/rotate are exact', async () => {
  const img = fg.image.crop(fg.image.decode(photo('coffee.jpg')), 100, 50, 64, 48);
  assert.deepEqual(img.shape, [48, 64, 3]);
  const px = await img.toArray();
  const a = { brightness: 1.2, contrast: 0.8, saturation: 1.5, gamma: 1.4 };
  const got = await fg.image.adjust(img, a).toArray();
  const want = new Float64Array(px.length);
  for (let p = 0; p < px.length; p += 3) {
    const l = 0.299 * px[p] + 0.587 * px[p + 1] + 0.114 * px[p + 2];
    for (let c = 0; c < 3; c++) {
      const v = ((l + a.saturation * (px[p + c] - l)) * a.brightness - 128) * a.contrast + 128;
      want[p + c] = 255 * Math.pow(Math.min(255, Math.max(0, v)) / 255, 1 / a.gamma);
    }
  }
  assert.ok(maxDiff(got, want) <= 1);
  const fh = await fg.image.flip(img, 'h').toArray();
  const r1 = fg.image.rotate90(img, 1);
  assert.deepEqual(r1.shape, [64, 48, 3]);
  const r = await r1.toArray();
  for (const [y, x] of [[0, 0], [47, 63], [10, 20]]) {
    for (let c = 0; c < 3; c++) {
      const v = px[(y * 64 + x) * 3 + c];
      assert.equal(fh[(y * 64 + (63 - x)) * 3 + c], v);
      assert.equal(r[(x * 48 + (47 - y)) * 3 + c], v); // clockwise
    }
  }
});

test('encode round-trips PNG exactly and transform resizes, sharpens and encodes', async () => {
  const img = fg.image.decode(photo('rocket.jpg'));
  const png = fg.image.encode(img, { format: 'png' });
  assert.ok(png instanceof Uint8Array);
  assert.deepEqual(await fg.image.decode(png).toArray(), await img.toArray());
  const r = fg.image.transform(photo('astronaut-1mp.jpg'), { width: 400, sharpen: 0.5, quality: 80, format: 'jpeg' });
  assert.equal(r.width, 400);
  assert.equal(r.height, 400);
  assert.equal(r.format, 'jpeg');
  assert.deepEqual(fg.image.probe(r.bytes), { width: 400, height: 400, format: 'jpeg' });
  for (const k of ['decode', 'process', 'encode']) assert.ok(Number.isFinite(r.timings[k]) && r.timings[k] >= 0, k);
});

function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** A PNG whose header claims w x h (a decompression bomb's header) with a tiny body. */
function pngHeader(w, h) {
  const chunk = (type, data) => {
    const body = new Uint8Array([...new TextEncoder().encode(type), ...data]);
    const out = new DataView(new ArrayBuffer(12 + data.length));
    out.setUint32(0, data.length);
    body.forEach((b, i) => out.setUint8(4 + i, b));
    out.setUint32(8 + data.length, crc32(body));
    return new Uint8Array(out.buffer);
  };
  const ihdr = new DataView(new ArrayBuffer(13));
  ihdr.setUint32(0, w);
  ihdr.setUint32(4, h);
  [8, 2, 0, 0, 0].forEach((b, i) => ihdr.setUint8(8 + i, b));
  const parts = [new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', new Uint8Array(ihdr.buffer)), chunk('IDAT', [0x78, 0x9c, 0x63, 0, 0, 0, 1, 0, 1]), chunk('IEND', [])];
  return new Uint8Array(parts.flatMap((p) => [...p]));
}

test('a bomb header is refused before decoding', () => {
  const bomb = pngHeader(60000, 60000);
  assert.deepEqual(fg.image.probe(bomb), { width: 60000, height: 60000, format: 'png' });
  throwsCode('bomb decode', () => fg.image.decode(bomb), 'FG_IMAGE_TOO_LARGE');
  throwsCode('bomb transform', () => fg.image.transform(bomb, { width: 100 }), 'FG_IMAGE_TOO_LARGE');
  throwsCode('lying small header', () => fg.image.decode(pngHeader(300, 200)), 'FG_IMAGE_DECODE');
});

test('corrupt, truncated, bomb and bad options give their codes', () => {
  const jpg = photo('coffee.jpg');
  throwsCode('garbage', () => fg.image.decode(new Uint8Array([1, 2, 3, 4, 5])), 'FG_IMAGE_DECODE');
  throwsCode('truncated jpeg', () => fg.image.decode(jpg.slice(0, jpg.length >> 1)), 'FG_IMAGE_DECODE');
  throwsCode('truncated png', () => fg.image.decode(photo('chelsea.png').slice(0, 5000)), 'FG_IMAGE_DECODE');
  throwsCode('probe garbage', () => fg.image.probe(new Uint8Array(10)), 'FG_IMAGE_DECODE');
  throwsCode('over maxPixels', () => fg.image.decode(jpg, { maxPixels: 1000 }), 'FG_IMAGE_TOO_LARGE');
  throwsCode('over maxSide', () => fg.image.transform(jpg, { width: 10, maxSide: 500 }), 'FG_IMAGE_TOO_LARGE');
  const img = fg.image.decode(jpg);
  throwsCode('width 0', () => fg.image.resize(img, { width: 0 }), 'FG_INVALID_ARGUMENT');
  throwsCode('unknown filter', () => fg.image.resize(img, { width: 10, filter: 'cubic' }), 'FG_INVALID_ARGUMENT');
  throwsCode('quality 0', () => fg.image.encode(img, { quality: 0 }), 'FG_INVALID_ARGUMENT');
  throwsCode('format gif', () => fg.image.encode(img, { format: 'gif' }), 'FG_INVALID_ARGUMENT');
  throwsCode('crop outside', () => fg.image.crop(img, 590, 0, 20, 10), 'FG_INVALID_ARGUMENT');
  throwsCode('blur NaN', () => fg.image.blur(img, NaN), 'FG_INVALID_ARGUMENT');
  throwsCode('sharpen negative', () => fg.image.transform(jpg, { width: 10, sharpen: -1 }), 'FG_INVALID_ARGUMENT');
  throwsCode('not bytes', () => fg.image.decode('hello'), 'FG_INVALID_ARGUMENT');
  // Still works after every error.
  assert.deepEqual(fg.image.resize(img, { width: 60 }).shape, [40, 60, 3]);
});
