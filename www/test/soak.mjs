// Soak test on loopback (not part of CI): for --minutes (default 5), 32
// concurrent clients send a mix of /img requests (Zipf over ~1000 variants),
// gallery pages, uploads to /api/transform and bad requests to a workerd
// started here, while the workerd process's resident memory (and the
// worker's wasm memory) is sampled every 5 s. Fails on any transport error
// or 5xx, and unless memory is stable: after a warm-up, the least-squares
// line through the RSS samples may rise by at most 10% (or 16 MiB, whichever
// is larger) over the rest of the run. A leak rises steadily; a settled heap
// does not. The warm-up is counted in requests, not time: workerd itself
// grows with the requests it has served before it settles (a bare workerd
// with a one-line Worker: 50 -> ~305 MiB over its first ~80,000 requests,
// flat after; this demo settles by ~150,000 with the wasm memory flat from
// the first seconds), so a time-based warm-up ended too early on a slow or
// busy machine. It ends at WARMUP_REQUESTS, or at 40% of the run if later;
// a run that serves too few requests fails for too few samples after it.
// Usage: node test/soak.mjs [--minutes 3] [--out file.json]
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ORIGIN, startServer, stats } from './server.mjs';
import { rng, variants, zipf } from './variants.mjs';

const { values: args } = parseArgs({ options: { minutes: { type: 'string', default: '5' }, out: { type: 'string' } } });
const minutes = Number(args.minutes);
const WARMUP_MS = 0.4 * minutes * 60_000;
const WARMUP_REQUESTS = 150_000;
let warmedAt = null; // seconds into the run when the warm-up ended
const { urls } = variants();
const random = rng(99);
const draw = zipf(urls.length, 1.0, random);
const upload = readFileSync(new URL('../images/coffee.jpg', import.meta.url));
const BAD = ['/img/nope.jpg', '/img/rocket.jpg?w=abc', '/img/../config.capnp', '/img/rocket.jpg?blur=99', '/nothing'];

const server = await startServer();
const t0 = Date.now();
const end = t0 + minutes * 60_000;
const samples = [];
const counts = { requests: 0, transport_errors: 0, status: {} };
const errors = [];

function request() {
  const x = random();
  if (x < 0.85) return [urls[draw()], {}];
  if (x < 0.93) return ['/', {}];
  if (x < 0.96) return ['/api/transform?w=256', { method: 'POST', body: upload }];
  return [BAD[Math.floor(random() * BAD.length)], {}];
}

async function client() {
  while (Date.now() < end) {
    const [path, init] = request();
    counts.requests += 1;
    try {
      const r = await fetch(`${ORIGIN}${path}`, init);
      await r.arrayBuffer();
      counts.status[r.status] = (counts.status[r.status] ?? 0) + 1;
      if (r.status >= 500) errors.push(`${path}: ${r.status}`);
    } catch (e) {
      counts.transport_errors += 1;
      errors.push(`${path}: ${e.message}`);
    }
  }
}

const sampler = setInterval(async () => {
  const rss = server.rss();
  const sample = { t_s: Math.round((Date.now() - t0) / 1000), rss_bytes: rss, requests: counts.requests };
  if (warmedAt === null && counts.requests >= WARMUP_REQUESTS && Date.now() - t0 >= WARMUP_MS) warmedAt = sample.t_s;
  samples.push(sample);
  try {
    sample.wasm_memory_bytes = (await stats()).wasm_memory_bytes;
  } catch {
    sample.wasm_memory_bytes = null;
  }
}, 5000);
try {
  await Promise.all(Array.from({ length: 32 }, client));
} finally {
  clearInterval(sampler);
}
const worker = await stats();
const alive = server.exited === null;
await server.stop();

const afterWarmup = warmedAt === null ? [] : samples.filter((s) => s.t_s >= warmedAt);
const base = afterWarmup[0]?.rss_bytes ?? null;
const peak = Math.max(...afterWarmup.map((s) => s.rss_bytes));
const last = samples[samples.length - 1]?.rss_bytes ?? null;
const allowed = base === null ? 0 : Math.max(16 * 1024 * 1024, 0.1 * base);
// Least-squares slope of RSS over time after the warm-up (bytes per second).
const n = afterWarmup.length;
const mt = afterWarmup.reduce((a, s) => a + s.t_s, 0) / n;
const mr = afterWarmup.reduce((a, s) => a + s.rss_bytes, 0) / n;
const slope =
  afterWarmup.reduce((a, s) => a + (s.t_s - mt) * (s.rss_bytes - mr), 0) /
  Math.max(1e-9, afterWarmup.reduce((a, s) => a + (s.t_s - mt) ** 2, 0));
const span = n > 1 ? afterWarmup[n - 1].t_s - afterWarmup[0].t_s : 0;
const fittedGrowth = slope * span;
const report = {
  minutes,
  clients: 32,
  warmup_requests: WARMUP_REQUESTS,
  warmup_ended_s: warmedAt,
  ...counts,
  errors_5xx_or_transport: errors.length,
  rss_after_warmup_bytes: base,
  rss_peak_after_warmup_bytes: peak,
  rss_last_bytes: last,
  rss_growth_after_warmup_bytes: base === null ? null : peak - base,
  rss_fitted_growth_after_warmup_bytes: Math.round(fittedGrowth),
  rss_slope_mib_per_min: (slope * 60) / 1048576,
  rss_growth_allowed_bytes: allowed,
  worker_cache: worker.cache,
  samples,
};
const mib = (b) => (b / 1048576).toFixed(1);
console.log(
  `soak: ${counts.requests} requests in ${minutes} min, ${errors.length} errors (5xx or transport), statuses ${JSON.stringify(counts.status)}; ` +
    `workerd RSS after warm-up ${mib(base)} MiB, peak ${mib(peak)} MiB, last ${mib(last)} MiB; ` +
    `fitted growth after warm-up ${mib(fittedGrowth)} MiB (${((slope * 60) / 1048576).toFixed(2)} MiB/min; allowed ${mib(allowed)} MiB)`,
);
if (args.out) writeFileSync(args.out, JSON.stringify(report, null, 2));
const problems = [];
if (errors.length) problems.push(`${errors.length} errors, first: ${errors.slice(0, 3).join('; ')}`);
if (!alive) problems.push('workerd exited');
if (base === null || n < 3) problems.push(`too few memory samples after the warm-up (${WARMUP_REQUESTS} requests and 40% of the run; it ended at ${warmedAt ?? 'never'} s)`);
else if (fittedGrowth > allowed) problems.push(`RSS rose by ${mib(fittedGrowth)} MiB (fitted) after the warm-up`);
if (problems.length) {
  console.error(`soak FAILED: ${problems.join('; ')}`);
  process.exit(1);
}
