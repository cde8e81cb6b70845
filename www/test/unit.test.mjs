// Unit tests of the worker's pure parts: parameter validation and
// canonicalisation, the LRU's bounds, ETag matching, security headers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalParams, canonicalQuery, parseParams, snapWidth, widthsFor } from '../src/params.js';
import { Lru } from '../src/lru.js';
import { etagFor, matchesIfNoneMatch } from '../src/etag.js';
import { securityHeaders, styleSource } from '../src/headers.js';
import { IMAGE_NAME } from '../src/names.js';

const key = (q, srcWidth = 1411) => canonicalQuery(canonicalParams(parseParams(new URLSearchParams(q)), srcWidth));

test('equivalent spellings give one canonical query', () => {
  const a = key('w=300&q=72');
  assert.equal(a, 'blur=0&fmt=jpeg&q=70&sharpen=0&w=320');
  assert.equal(key('q=70&w=320&fmt=jpg&blur=0&sharpen=0'), a);
  assert.equal(key('sharpen=0.1&blur=0.2&w=257&q=70'), 'blur=0&fmt=jpeg&q=70&sharpen=0&w=320');
  assert.equal(key('fmt=png&q=10&w=64'), 'blur=0&fmt=png&q=0&sharpen=0&w=64'); // quality means nothing for PNG
  assert.equal(key('fmt=webp&q=90&w=64'), 'blur=0&fmt=webp&q=0&sharpen=0&w=64'); // nor for (lossless) WebP
});

test('widths snap up to the allowed set and never past the source', () => {
  assert.equal(snapWidth(1, 1411), 64);
  assert.equal(snapWidth(641, 1411), 768);
  assert.equal(snapWidth(1300, 1411), 1411);
  assert.equal(snapWidth(5000, 1411), 1411);
  assert.equal(snapWidth(null, 640), 640);
  assert.deepEqual(widthsFor(451), [64, 128, 256, 320, 451]);
});

test('the key space per image is finite whatever the client sends', () => {
  const keys = new Set();
  for (let w = 1; w <= 8192; w += 7) for (const q of [1, 33, 77, 100]) keys.add(key(`w=${w}&q=${q}`, 1411));
  assert.ok(keys.size <= widthsFor(1411).length * 20, `${keys.size} keys`);
});

test('bad parameters are refused with a message naming them', () => {
  const bad = {
    'w=0': /w must be an integer in 1\.\.8192/, 'w=8193': /w must be/, 'w=1e3': /w must be/, 'w=-5': /w must be/,
    'q=0': /q must be/, 'q=101': /q must be/, 'fmt=gif': /fmt must be one of/, 'blur=20.5': /blur must be/,
    'blur=NaN': /blur must be/, 'sharpen=6': /sharpen must be/, 'h=10': /unknown parameter "h"/,
    'w=1&w=2': /given more than once/, '__proto__=1': /unknown parameter/,
  };
  for (const [q, re] of Object.entries(bad)) {
    assert.throws(() => parseParams(new URLSearchParams(q)), (e) => e.status === 400 && re.test(e.message), q);
  }
});

test('image names allow no path tricks', () => {
  for (const ok of ['rocket.jpg', 'astronaut-1mp.jpg', 'chelsea.webp']) assert.ok(IMAGE_NAME.test(ok), ok);
  for (const bad of ['../rocket.jpg', 'a/b.jpg', 'rocket.jpg.png', '.jpg', 'ROCKET.JPG', 'rocket%2ejpg', 'rocket.gif', 'rocket.jpg\0', '-x.jpg']) {
    assert.ok(!IMAGE_NAME.test(bad), bad);
  }
});

test('the LRU keeps within its entry and byte bounds, dropping the least recently used', () => {
  const lru = new Lru({ maxEntries: 3, maxBytes: 100 });
  lru.set('a', 1, 10);
  lru.set('b', 2, 10);
  lru.set('c', 3, 10);
  lru.get('a'); // a is now the most recent
  lru.set('d', 4, 10);
  assert.equal(lru.get('b'), undefined);
  assert.equal(lru.get('a'), 1);
  lru.set('e', 5, 95);
  assert.ok(lru.bytes <= 100 && lru.size <= 3);
  assert.equal(lru.get('e'), 5);
  assert.equal(lru.set('huge', 6, 101), false);
  lru.set('e', 7, 20); // replacing an entry frees its old size
  assert.equal(lru.bytes, 20);
});

test('ETags are stable per key and If-None-Match matches them weakly', async () => {
  const e = await etagFor('k1');
  assert.equal(await etagFor('k1'), e);
  assert.notEqual(await etagFor('k2'), e);
  assert.ok(matchesIfNoneMatch(e, e));
  assert.ok(matchesIfNoneMatch(`"x", W/${e}`, e));
  assert.ok(matchesIfNoneMatch('*', e));
  assert.ok(!matchesIfNoneMatch('"x"', e));
  assert.ok(!matchesIfNoneMatch(`${' '.repeat(2000)}${e}`, e));
});

test('every kind of response gets a strict CSP and the security headers', async () => {
  const hash = await styleSource('body{}');
  const gallery = securityHeaders(new Headers(), 'gallery', hash);
  assert.match(gallery.get('Content-Security-Policy'), /default-src 'none'.*script-src 'none'/);
  assert.ok(gallery.get('Content-Security-Policy').includes(`style-src '${hash}'`));
  const lab = securityHeaders(new Headers(), 'lab', hash).get('Content-Security-Policy');
  assert.match(lab, /script-src 'self' 'wasm-unsafe-eval'/);
  assert.ok(!lab.includes('unsafe-inline'));
  const none = securityHeaders(new Headers(), 'none');
  assert.match(none.get('Content-Security-Policy'), /sandbox/);
  for (const h of [gallery, none]) {
    assert.equal(h.get('X-Content-Type-Options'), 'nosniff');
    assert.equal(h.get('X-Frame-Options'), 'DENY');
    assert.equal(h.get('Referrer-Policy'), 'no-referrer');
  }
});
