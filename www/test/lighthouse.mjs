// Lighthouse 12 (performance only) on the gallery served by workerd, in
// Debian's headless Chromium: one run on a cold worker (the first request
// instantiates the wasm, every image is a cache miss transformed on the
// spot) and one on the warm worker (images from the cache: the steady state
// of an edge cache). Lighthouse's desktop preset: simulated throttling
// (40 ms RTT, 10 Mbit/s, no CPU slowdown). Fails unless the warm run has
// LCP < 1.0 s and CLS < 0.05, and the cold run CLS < 0.05; the cold run's
// LCP is reported, not held to 1 s (its hero image costs one transform).
// Usage: node test/lighthouse.mjs [--out file.json]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ORIGIN, startServer } from './server.mjs';
import { CHROMIUM } from './browser.mjs';

const { values: args } = parseArgs({ options: { out: { type: 'string' } } });
const www = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(join(tmpdir(), 'fg-lighthouse-'));

// Lighthouse sometimes fails to record its trace on a loaded machine
// ("Something went wrong with recording the trace", NO_NAVSTART) and asks to
// be run again: such a run produced no report, so it is retried (twice at
// most, said in the output and the JSON). A run that reports bad metrics is
// never retried. (A retried cold run finds the worker warm: its `attempt`
// says so.)
function lighthouse(label) {
  for (let attempt = 1; ; attempt++) {
    try {
      return { ...lighthouseOnce(`${label}${attempt > 1 ? `-retry${attempt - 1}` : ''}`, label), attempt };
    } catch (e) {
      if (attempt >= 3) throw e;
      console.log(`lighthouse ${label}: no report (${e.message.split('\n')[0]}); running it again`);
    }
  }
}

function lighthouseOnce(file, label) {
  const out = join(dir, `${file}.json`);
  execFileSync(
    join(www, 'node_modules', '.bin', 'lighthouse'),
    [
      `${ORIGIN}/`,
      '--preset=desktop',
      '--only-categories=performance',
      '--output=json',
      `--output-path=${out}`,
      '--quiet',
      `--chrome-flags=--headless=new --no-sandbox --user-data-dir=${join(dir, `profile-${file}`)}`,
    ],
    { env: { ...process.env, CHROME_PATH: CHROMIUM }, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const r = JSON.parse(readFileSync(out, 'utf8'));
  const a = r.audits;
  return {
    run: label,
    lcp_ms: a['largest-contentful-paint'].numericValue,
    cls: a['cumulative-layout-shift'].numericValue,
    fcp_ms: a['first-contentful-paint'].numericValue,
    tbt_ms: a['total-blocking-time'].numericValue,
    ttfb_ms: a['server-response-time']?.numericValue ?? null,
    performance_score: r.categories.performance.score,
    lighthouse: r.lighthouseVersion,
    user_agent: r.environment?.hostUserAgent ?? null,
    throttling: r.configSettings.throttlingMethod,
  };
}

const server = await startServer();
const runs = [];
try {
  runs.push(lighthouse('cold-worker'));
  runs.push(lighthouse('warm-worker'));
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
for (const r of runs) {
  console.log(
    `lighthouse ${r.run}: LCP ${r.lcp_ms.toFixed(0)} ms, CLS ${r.cls.toFixed(4)}, FCP ${r.fcp_ms.toFixed(0)} ms, ` +
      `TBT ${r.tbt_ms.toFixed(0)} ms, server response ${r.ttfb_ms?.toFixed(1)} ms, score ${r.performance_score}`,
  );
}
if (args.out) writeFileSync(args.out, JSON.stringify({ preset: 'desktop', runs }, null, 2));
const bad = runs.filter((r) => !(r.cls < 0.05 && (r.run === 'cold-worker' || r.lcp_ms < 1000)));
const cold = runs.find((r) => r.run === 'cold-worker');
if (cold && cold.lcp_ms >= 1000) console.log(`note: the cold worker's LCP is ${cold.lcp_ms.toFixed(0)} ms, over 1 s (not asserted)`);
if (bad.length) {
  console.error(`lighthouse FAILED: ${bad.map((r) => `${r.run} LCP ${r.lcp_ms} ms CLS ${r.cls}`).join('; ')}`);
  process.exit(1);
}
