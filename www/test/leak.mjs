// Worker leak figure (a step of scripts/ci.sh): a workerd started here gets
// a warm-up (every canonical /img variant once, so the cache holds its
// working set, then 2,000 requests of the soak's mix), then 10,000 more
// requests of that mix (cache hits, gallery pages, uploads transformed by
// fusegraph, bad requests). Prints and writes (--out) workerd's RSS and the
// worker's wasm linear memory and cache before and after. Fails on any 5xx
// or transport error, if the wasm memory grew at all (it never shrinks, so
// growth over repeated identical work is memory kept), or if the cache grew
// past its bounds. RSS is measured but not bounded: a bare workerd serving
// a one-line Worker rises from 50 to ~305 MiB over its first ~80,000
// requests and then stays flat (measured; see SECURITY.md), so over 10,000
// requests RSS shows workerd's own ramp, not the worker's.
// Usage: node test/leak.mjs [--requests 10000] [--out file.json]
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ORIGIN, startServer, stats } from './server.mjs';
import { canonicalVariants, rng, variants, zipf } from './variants.mjs';

const { values: args } = parseArgs({ options: { requests: { type: 'string', default: '10000' }, out: { type: 'string' } } });
const total = Number(args.requests);
const { urls } = variants();
const random = rng(99);
const draw = zipf(urls.length, 1.0, random);
const upload = readFileSync(new URL('../images/coffee.jpg', import.meta.url));
const BAD = ['/img/nope.jpg', '/img/rocket.jpg?w=abc', '/nothing'];
const mix = () => {
  const x = random();
  if (x < 0.85) return [urls[draw()], {}];
  if (x < 0.93) return ['/', {}];
  if (x < 0.96) return ['/api/transform?w=256', { method: 'POST', body: upload }];
  return [BAD[Math.floor(random() * BAD.length)], {}];
};
const errors = [];
async function send([path, init]) {
  try {
    const r = await fetch(`${ORIGIN}${path}`, init);
    await r.arrayBuffer();
    if (r.status >= 500) errors.push(`${path}: ${r.status}`);
  } catch (e) {
    errors.push(`${path}: ${e.message}`);
  }
}
async function run(n, next) {
  let left = n;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (left-- > 0) await send(next());
  }));
}

const server = await startServer();
const t0 = performance.now();
const canon = canonicalVariants().map((v) => `/img/${v.name}?blur=0&fmt=jpeg&q=${v.q}&sharpen=${v.sharpen}&w=${v.w}`);
let i = 0;
await run(canon.length, () => [canon[i++], {}]);
await run(2000, mix);
const snap = async () => {
  const s = await stats();
  return { rss_bytes: server.rss(), wasm_memory_bytes: s.wasm_memory_bytes, cache_entries: s.cache.entries, cache_bytes: s.cache.bytes, requests: s.requests };
};
const before = await snap();
const t1 = performance.now();
await run(total, mix);
const after = await snap();
const t2 = performance.now();
const alive = server.exited === null;
await server.stop();

const mib = (b) => (b / 1048576).toFixed(1);
const report = {
  requests: total,
  warmup_requests: canon.length + 2000,
  seconds: Math.round((t2 - t1) / 100) / 10,
  total_seconds: Math.round((t2 - t0) / 100) / 10,
  errors_5xx_or_transport: errors.length,
  before,
  after,
  rss_growth_bytes: after.rss_bytes - before.rss_bytes,
  wasm_memory_growth_bytes: after.wasm_memory_bytes - before.wasm_memory_bytes,
};
console.log(
  `worker leak check: ${total} requests in ${report.seconds} s (after ${report.warmup_requests} warm-up), ${errors.length} errors; ` +
    `workerd RSS ${mib(before.rss_bytes)} -> ${mib(after.rss_bytes)} MiB, wasm memory ${mib(before.wasm_memory_bytes)} -> ${mib(after.wasm_memory_bytes)} MiB, ` +
    `cache ${before.cache_entries} -> ${after.cache_entries} entries (${mib(before.cache_bytes)} -> ${mib(after.cache_bytes)} MiB)`,
);
if (args.out) writeFileSync(args.out, JSON.stringify(report, null, 2));
const problems = [];
if (errors.length) problems.push(`${errors.length} errors, first: ${errors.slice(0, 3).join('; ')}`);
if (!alive) problems.push('workerd exited');
if (!(before.wasm_memory_bytes > 0)) problems.push('the wasm memory was not measured');
else if (report.wasm_memory_growth_bytes !== 0) problems.push(`wasm memory grew by ${mib(report.wasm_memory_growth_bytes)} MiB`);
if (after.cache_bytes > 96 * 1048576 || after.cache_entries > 4096) problems.push('the cache passed its bounds');
if (problems.length) {
  console.error(`worker leak check FAILED: ${problems.join('; ')}`);
  process.exit(1);
}
