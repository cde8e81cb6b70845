// Bounded load test on loopback, against a workerd started here:
//  1. warm-up: each canonical variant (~100) requested once, in its canonical
//     spelling, one at a time: these are the cold misses, and their time to
//     first byte is the miss figure;
//  2. autocannon, 64 connections for 30 s, each request one of ~1000 URLs
//     spelled as clients would (other widths that snap to the same one,
//     other quality spellings, parameter orders; see variants.mjs), drawn
//     with a Zipf law. Every one should hit the key the warm-up filled, so
//     the hit rate measures canonicalisation and the cache's capacity;
//  3. time to first byte of hits (raw spellings again) and of the page.
// Fails unless: no errors, no non-2xx, hit rate >= 95%.
// Usage: node test/load.mjs [--duration 30] [--out file.json]
import autocannon from 'autocannon';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ORIGIN, startServer, stats } from './server.mjs';
import { rng, variants, zipf } from './variants.mjs';
import { summary, ttfb } from './ttfb.mjs';

const { values: args } = parseArgs({
  options: { duration: { type: 'string', default: '30' }, connections: { type: 'string', default: '64' }, out: { type: 'string' } },
});
const duration = Number(args.duration);
const connections = Number(args.connections);

const { urls, canonical } = variants();
const draw = zipf(urls.length, 1.0, rng(42));
const seen = new Set();
let hits = 0;
let misses = 0;
let otherStatus = 0;

const server = await startServer();
let failed = false;
try {
  const miss = [];
  const bad = [];
  for (const u of canonical) {
    const r = await ttfb(ORIGIN, u);
    if (r.status !== 200 || r.xcache !== 'MISS') bad.push(`warm-up ${u}: expected a 200 MISS, got ${r.status} ${r.xcache}`);
    miss.push(r.ms);
  }
  const afterWarmup = await stats();
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

  const hit = [];
  for (const u of urls.slice(0, 300)) {
    const r = await ttfb(ORIGIN, u);
    if (r.xcache !== 'HIT') bad.push(`${u}: expected HIT, got ${r.status} ${r.xcache}`);
    hit.push(r.ms);
  }
  const page = [];
  for (let i = 0; i < 50; i += 1) page.push((await ttfb(ORIGIN, '/')).ms);

  const total = hits + misses;
  const report = {
    tool: 'autocannon 9.0.0',
    duration_s: duration,
    connections,
    url_variants: urls.length,
    canonical_keys: canonical.length,
    distinct_urls_requested: seen.size,
    warmup_transforms: afterWarmup.transforms,
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
    ttfb_miss_ms: summary(miss), // the warm-up's cold misses, one request at a time
    ttfb_hit_ms: summary(hit),
    ttfb_page_ms: summary(page),
    worker: { store: worker.store, cache: worker.cache, transforms: worker.transforms, status: worker.status },
    workerd_rss_bytes: server.rss(),
  };
  console.log(JSON.stringify(report, null, 2));
  console.log(
    `load: warm-up ${canonical.length} canonical keys; then ${report.requests} requests over ${urls.length} URL variants in ${duration} s (${Math.round(report.requests_per_s)}/s) over ${connections} connections, ` +
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
