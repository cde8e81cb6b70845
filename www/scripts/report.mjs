// Gathers the edge demo's figures (bundle sizes, leak check, load test, Lighthouse,
// soak when it was run) from dist/results/ with the machine's details into
// one JSON: dist/results/edge.json, and bench/results/edge.json with --bench.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, release } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { CHROMIUM } from '../test/browser.mjs';

const www = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = join(www, 'dist', 'results');
const read = (name) => (existsSync(join(results, name)) ? JSON.parse(readFileSync(join(results, name), 'utf8')) : null);
const version = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
};
const gz = (p) => gzipSync(readFileSync(p), { level: 9 }).length;

const sizes = JSON.parse(readFileSync(join(www, 'dist', 'sizes.json'), 'utf8'));
const bundle = {
  ...sizes,
  worker_total_bytes: sizes.worker_js_bytes + sizes.worker_wasm_bytes,
  worker_js_gzip_bytes: gz(join(www, 'dist', 'worker', 'worker.js')),
  worker_wasm_gzip_bytes: gz(join(www, 'dist', 'worker', 'fusegraph_wasm_bg.wasm')),
};
bundle.worker_total_gzip_bytes = bundle.worker_js_gzip_bytes + bundle.worker_wasm_gzip_bytes;

const report = {
  what: 'fusegraph edge demo on workerd, loopback',
  date: new Date().toISOString(),
  machine: {
    cpu: cpus()[0]?.model ?? null,
    cores: cpus().length,
    memory_bytes: totalmem(),
    kernel: release(),
    // Other work on the machine skews every figure: the 1/5/15-minute load when the report ran.
    load_average: loadavg().map((l) => Math.round(l * 100) / 100),
    node: process.version,
    workerd: version(join(www, 'node_modules', '.bin', 'workerd'), ['--version']),
    chromium: version(CHROMIUM, ['--version']),
  },
  bundle,
  load: read('load.json'),
  lighthouse: read('lighthouse.json'),
  leak: read('leak.json'),
  soak: read('soak.json'),
};
if (report.soak) delete report.soak.samples;
mkdirSync(results, { recursive: true });
writeFileSync(join(results, 'edge.json'), `${JSON.stringify(report, null, 2)}\n`);
if (process.argv.includes('--bench')) {
  writeFileSync(join(www, '..', 'bench', 'results', 'edge.json'), `${JSON.stringify(report, null, 2)}\n`);
}
console.log(
  `bundle: worker.js ${bundle.worker_js_bytes} B (${bundle.worker_js_gzip_bytes} B gzip) + wasm ${bundle.worker_wasm_bytes} B ` +
    `(${bundle.worker_wasm_gzip_bytes} B gzip) = ${bundle.worker_total_bytes} B (${bundle.worker_total_gzip_bytes} B gzip)`,
);
