// Bounded load test on loopback: autocannon, 64 connections for 30 s, each
// request an /img URL drawn from ~1000 variants with a Zipf law, against a
// workerd started cold here. Then the time to first byte of cache misses
// (URLs the run never asked for) and of hits (the same URLs again), and of
// the gallery page. Fails unless: no errors, no non-2xx, hit rate >= 95%.
// Usage: node test/load.mjs [--duration 30] [--out file.json]
import autocannon from 'autocannon';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ORIGIN, startServer, stats } from './server.mjs';
import { rng, variants, zipf, manifest } from './variants.mjs';
import { summary, ttfb } from './ttfb.mjs';

const { values: args } = parseArgs({
  options: { duration: { type: 'string', default: '30' }, connections: { type: 'string', default: '64' }, out: { type: 'string' } },
});
const duration = Number(args.duration);
const connections = Number(args.connections);

const urls = variants();
const draw = zipf(urls.length, 1.0, rng(42));
const seen = new Set();
let hits = 0;
let misses = 0;
let otherStatus = 0;

const server = await startServer();
let failed = false;
try {
  const result = await autocannon({
    url: ORIGIN,
    connections,
    duration,
    requests: [
      {
        method: 'GET',
        setupRequest: (req) => {
          const path = urls[draw()];
          seen.add(path);
          return { ...req, path };
        },
        onResponse: (status, _body, _ctx, headers) => {
          const x = headers['x-cache'] ?? headers['X-Cache'];
          if (status !== 200) otherStatus += 1;
          else if (x === 'HIT') hits += 1;
          else if (x === 'MISS') misses += 1;
        },
      },
    ],
  });
  const worker = await stats();

  // TTFB: misses are URLs outside the run's set (q=55, never drawn); hits are the same URLs again.
  const fresh = [];
  for (const img of manifest().images) {
    for (const w of [256, 640]) for (const blur of [0, 1]) fresh.push(`/img/${img.name}?w=${w}&q=55&blur=${blur}`);
  }
  const miss = [];
  const hit = [];
  const bad = [];
  for (const u of fresh) {
    const r = await ttfb(ORIGIN, u);
    if (r.xcache !== 'MISS') bad.push(`${u}: expected MISS, got ${r.status} ${r.xcache}`);
    miss.push(r.ms);
  }
  for (let rep = 0; rep < 5; rep += 1) {
    for (const u of fresh) {
      const r = await ttfb(ORIGIN, u);
      if (r.xcache !== 'HIT') bad.push(`${u}: expected HIT, got ${r.status} ${r.xcache}`);
      hit.push(r.ms);
    }
  }
  const page = [];
  for (let i = 0; i < 50; i += 1) page.push((await ttfb(ORIGIN, '/')).ms);

  const total = hits + misses;
  const report = {
    tool: 'autocannon 9.0.0',
    duration_s: duration,
    connections,
    url_variants: urls.length,
    distinct_urls_requested: seen.size,
    zipf_s: 1.0,
    requests: result.requests.total,
    requests_per_s: result.requests.average,
    errors: result.errors,
    timeouts: result.timeouts,
    non_2xx: result.non2xx,
    hits,
    misses,
    hit_rate: total ? hits / total : 0,
    latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    ttfb_miss_ms: summary(miss),
    ttfb_hit_ms: summary(hit),
    ttfb_page_ms: summary(page),
    worker: { store: worker.store, cache: worker.cache, transforms: worker.transforms, status: worker.status },
    workerd_rss_bytes: server.rss(),
  };
  console.log(JSON.stringify(report, null, 2));
  console.log(
    `load: ${report.requests} requests in ${duration} s (${Math.round(report.requests_per_s)}/s) over ${connections} connections, ` +
      `${report.errors} errors, ${report.non_2xx} non-2xx, hit rate ${(100 * report.hit_rate).toFixed(2)}% (${hits} hits, ${misses} misses)`,
  );
  console.log(
    `TTFB hit p50 ${report.ttfb_hit_ms.p50_ms} ms / p99 ${report.ttfb_hit_ms.p99_ms} ms; ` +
      `miss p50 ${report.ttfb_miss_ms.p50_ms} ms / p99 ${report.ttfb_miss_ms.p99_ms} ms; page p50 ${report.ttfb_page_ms.p50_ms} ms / p99 ${report.ttfb_page_ms.p99_ms} ms`,
  );
  if (args.out) writeFileSync(args.out, JSON.stringify(report, null, 2));
  const problems = [];
  if (report.errors || report.timeouts) problems.push(`${report.errors} errors, ${report.timeouts} timeouts`);
  if (report.non_2xx || otherStatus) problems.push(`${report.non_2xx} non-2xx responses`);
  if (report.hit_rate < 0.95) problems.push(`hit rate ${report.hit_rate} < 0.95`);
  problems.push(...bad.slice(0, 5));
  if (problems.length) {
    console.error(`load test FAILED: ${problems.join('; ')}`);
    failed = true;
  }
} finally {
  await server.stop();
}
process.exit(failed ? 1 : 0);
