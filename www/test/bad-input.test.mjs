// Randomised bad input against the worker: random paths and traversal
// attempts (also as raw request lines, which fetch() would normalise),
// random parameters, methods and headers, corrupt and decompression-bomb
// uploads. No answer may be a 5xx, known cases must get their status, and
// the worker must still serve afterwards.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { crc32, deflateSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { ORIGIN, PORT, startServer, stats } from './server.mjs';
import { rng } from './variants.mjs';

const SEED = Number(process.env.FUZZ_SEED ?? 1234);
const N = Number(process.env.FUZZ_N ?? 1500);
const random = rng(SEED);
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
let server;

before(async () => {
  server = await startServer({ log: !!process.env.FUZZ_LOG });
});
after(async () => {
  await server?.stop();
});

const NAMES = ['rocket.jpg', 'coffee.jpg', 'chelsea.png', 'chelsea.webp', 'retina.jpg', 'nope.jpg', 'ROCKET.JPG', 'rocket', '.jpg', 'config.capnp'];
const TRAVERSAL = [
  '../config.capnp', '..%2fconfig.capnp', '%2e%2e%2fconfig.capnp', '..%5cconfig.capnp', '....//config.capnp',
  '%252e%252e%252fconfig.capnp', 'rocket.jpg%00.png', 'rocket.jpg/../../package.json', '..\\..\\package.json',
  '%c0%ae%c0%ae/config.capnp', '/etc/passwd', '//etc/passwd', 'LICENSES.md', '.gitignore',
];
const PREFIXES = ['/img/', '/src/', '/assets/', '/', '/api/transform/', '/lab/', '/img//'];
const VALUES = ['', '-1', '0', '1', '80', '640', '99999999999', '1e3', '0x10', 'NaN', 'Infinity', '3.5', '.5', '5.', '1,2', ' 10', '%00', 'jpeg', 'gif', 'svg', 'webp', 'JPEG', '<script>', '\u00e9', 'a'.repeat(300)];
const KEYS = ['w', 'q', 'fmt', 'blur', 'sharpen', 'h', 'url', 'src', 'W', 'w[]', '__proto__', 'constructor', ''];

function randomQuery() {
  const parts = [];
  for (let i = int(0, 5); i > 0; i -= 1) parts.push(`${encodeURIComponent(pick(KEYS))}=${encodeURIComponent(pick(VALUES))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

function randomPath() {
  const kind = random();
  if (kind < 0.35) return `${pick(PREFIXES)}${pick(NAMES)}${randomQuery()}`;
  if (kind < 0.6) return `${pick(PREFIXES)}${pick(TRAVERSAL)}${randomQuery()}`;
  // random bytes, percent-encoded where they must be
  let s = '/';
  for (let i = int(0, 40); i > 0; i -= 1) {
    const c = int(0x20, 0x7e);
    s += /[A-Za-z0-9/._~-]/.test(String.fromCharCode(c)) ? String.fromCharCode(c) : `%${c.toString(16).padStart(2, '0')}`;
  }
  return s + randomQuery();
}

async function check(path, init = {}) {
  const r = await fetch(`${ORIGIN}${path}`, init);
  const body = await r.text();
  assert.ok(r.status < 500, `${init.method ?? 'GET'} ${path} answered ${r.status}: ${body.slice(0, 200)}`);
  assert.ok(!body.includes('workerd.capnp') && !body.includes('"devDependencies"'), `${path} leaked a file`);
  return { status: r.status, body, headers: r.headers };
}

/** One raw HTTP/1.1 request line, exactly as written (no client normalisation). */
function raw(target) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(PORT, '127.0.0.1');
    let data = '';
    sock.on('data', (d) => {
      data += d;
    });
    sock.on('end', () => resolve(data));
    sock.on('error', reject);
    sock.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  });
}

/**
 * POSTs to /api/transform on a raw socket and resolves to the status of the
 * answer. Announced (Content-Length over the cap): only the headers are
 * sent, as a client waiting for 100-continue would, since the worker answers
 * without reading. Chunked: the cap plus one chunk is sent and then nothing
 * more, so the worker must count the stream to find it too long.
 */
function rawUpload(size, chunked) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(PORT, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`upload of ${size} B: no answer within 10 s`));
    }, 10_000);
    sock.on('data', (d) => {
      data += d;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(data);
      if (m) {
        clearTimeout(timer);
        sock.destroy();
        resolve(Number(m[1]));
      }
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`upload of ${size} B: ${e.message} before an answer`));
    });
    const head = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`;
    sock.write(`POST /api/transform HTTP/1.1\r\nHost: 127.0.0.1\r\n${head}\r\n\r\n`);
    if (!chunked) return;
    const piece = Buffer.alloc(64 * 1024);
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        sent += piece.length;
        sock.write(`${piece.length.toString(16)}\r\n`);
        sock.write(piece);
        if (!sock.write('\r\n')) return sock.once('drain', pump);
      }
      return undefined;
    };
    pump();
  });
}

function png(width, height, idat) {
  const chunk = (type, data) => {
    const b = Buffer.alloc(12 + data.length);
    b.writeUInt32BE(data.length, 0);
    b.write(type, 4, 'latin1');
    data.copy(b, 8);
    b.writeUInt32BE(crc32(b.subarray(4, 8 + data.length)), 8 + data.length);
    return b;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 0; // greyscale
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))]);
}

function jpegHeader(width, height) {
  const real = readFileSync(new URL('../images/rocket.jpg', import.meta.url));
  const b = Buffer.from(real);
  for (let i = 2; i < b.length - 9; ) {
    const marker = b[i + 1];
    if (marker >= 0xc0 && marker <= 0xc3) {
      b.writeUInt16BE(height, i + 5);
      b.writeUInt16BE(width, i + 7);
      return b;
    }
    i += 2 + b.readUInt16BE(i + 2);
  }
  throw new Error('no SOF in rocket.jpg');
}

test('known bad requests get their status, never a 5xx', async () => {
  assert.equal((await check('/img/nope.jpg')).status, 404);
  assert.equal((await check('/img/rocket.jpg?w=0')).status, 400);
  assert.equal((await check('/img/rocket.jpg?w=9000')).status, 400);
  assert.equal((await check('/img/rocket.jpg?q=101')).status, 400);
  assert.equal((await check('/img/rocket.jpg?fmt=gif')).status, 400);
  assert.equal((await check('/img/rocket.jpg?blur=21')).status, 400);
  assert.equal((await check('/img/rocket.jpg?sharpen=-1')).status, 400);
  assert.equal((await check('/img/rocket.jpg?url=http://example.com/')).status, 400);
  assert.match((await check('/img/rocket.jpg?w=abc')).body, /w must be an integer/);
  assert.equal((await check('/img/rocket.jpg', { method: 'DELETE' })).status, 405);
  assert.equal((await check(`/img/rocket.jpg?w=${'1'.repeat(3000)}`)).status, 414);
  // Oversized bodies: announced (refused before reading) and chunked (cut off at the cap).
  assert.equal(await rawUpload(9 * 1024 * 1024, false), 413);
  assert.equal(await rawUpload(8 * 1024 * 1024 + 64 * 1024, true), 413);
  assert.equal((await check('/api/transform', { method: 'POST', body: jpegHeader(9000, 100) })).status, 413);
  assert.equal((await check('/api/transform', { method: 'POST', body: jpegHeader(6000, 6000) })).status, 413);
  // A real deflate bomb: 20000 x 20000 zero pixels compress to a few hundred kB.
  const bomb = png(20000, 20000, deflateSync(Buffer.alloc(20000 * 2001), { level: 9 }));
  assert.equal((await check('/api/transform', { method: 'POST', body: bomb })).status, 413);
  assert.equal((await check('/api/transform', { method: 'POST', body: Buffer.from('not an image at all') })).status, 422);
  const real = readFileSync(new URL('../images/coffee.jpg', import.meta.url));
  assert.equal((await check('/api/transform?w=200', { method: 'POST', body: real.subarray(0, 600) })).status, 422);
  assert.equal((await check('/api/transform?w=200', { method: 'POST', body: real })).status, 200);
});

test('traversal attempts never reach a file outside the allow-lists', async () => {
  for (const prefix of ['/img/', '/src/', '/assets/']) {
    for (const t of TRAVERSAL) {
      const res = await check(`${prefix}${t}`);
      assert.ok([400, 404].includes(res.status), `${prefix}${t}: ${res.status}`);
      const text = await raw(`${prefix}${t}`);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      assert.ok(status >= 400 && status < 500, `raw ${prefix}${t}: ${text.slice(0, 80)}`);
      assert.ok(!text.includes('workerd.capnp') && !text.includes('root:x:0'), `raw ${prefix}${t} leaked a file`);
    }
  }
});

test(`${N} random requests (seed ${SEED}): no 5xx, and the worker still serves`, async () => {
  const counts = {};
  const methods = ['GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'OPTIONS'];
  let i = 0;
  const one = async () => {
    const method = pick(methods);
    const path = random() < 0.15 ? `/api/transform${randomQuery()}` : randomPath();
    const init = { method, headers: {} };
    if (random() < 0.3) init.headers['If-None-Match'] = pick(['*', '"x"', 'W/"abc"', '', 'a'.repeat(2000), '"0123456789abcdef0123456789abcdef"']);
    if (method === 'POST' || method === 'PUT') {
      init.body = random() < 0.5 ? Buffer.from(Array.from({ length: int(0, 4000) }, () => int(0, 255))) : jpegHeader(int(1, 65535), int(1, 65535));
    }
    const { status } = await check(path, init);
    counts[status] = (counts[status] ?? 0) + 1;
  };
  const workers = Array.from({ length: 8 }, async () => {
    while (i < N) {
      i += 1;
      await one();
    }
  });
  await Promise.all(workers);
  console.log(`bad input: ${N} random requests, statuses ${JSON.stringify(counts)}`);
  assert.equal((await fetch(`${ORIGIN}/img/rocket.jpg?w=320`)).status, 200);
  const s = await stats();
  const fivexx = Object.entries(s.status).filter(([k]) => Number(k) >= 500);
  assert.deepEqual(fivexx, [], 'the worker counted 5xx answers');
  assert.equal(server.exited, null, 'workerd is still running');
});
