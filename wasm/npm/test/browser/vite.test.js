// Vite (a dev dependency) bundles a consumer page that imports 'fusegraph'
// from node_modules; the built output (JS chunks plus the .wasm asset Vite
// emits for the package's `new URL(..., import.meta.url)`) is served and
// loaded in headless Chromium, on WebGPU (SwiftShader) and on the CPU.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'vite';
import { consumerProject } from '../runtimes/project.js';
import { checkConsumerResult } from '../runtimes/expect.js';
import { serve } from './server.mjs';
import { runPage, WEBGPU_FLAGS } from './launch.js';

const INDEX = `<!doctype html>
<meta charset="utf-8">
<title>fusegraph with Vite</title>
<script type="module" src="./main.js"></script>
`;

const MAIN = `import { init } from 'fusegraph';
import { compute } from './lib/runtimes/consumer.js';
const backend = new URLSearchParams(location.search).get('backend') ?? 'auto';
try {
  window.fusegraphResult = await compute(init, { backend });
} catch (e) {
  window.fusegraphResult = { error: \`\${e.code}: \${e.message}\` };
}
`;

let project;
let server;
before(async () => {
  project = await consumerProject('vite', { 'index.html': INDEX, 'main.js': MAIN });
  await build({ root: project.dir, logLevel: 'warn', build: { outDir: 'dist', target: 'es2022' } });
  server = await serve(join(project.dir, 'dist'));
});
after(async () => {
  await server?.close();
  await project?.remove();
});

test('Vite emits the .wasm as an asset of the bundle', async () => {
  const assets = await readdir(join(project.dir, 'dist', 'assets'));
  assert.ok(assets.some((f) => f.endsWith('.wasm')), `assets: ${assets.join(', ')}`);
  assert.ok(assets.some((f) => f.endsWith('.js')), `assets: ${assets.join(', ')}`);
});

test('the Vite bundle runs on WebGPU in Chromium and matches the f64 reference', async () => {
  const r = await runPage(`${server.url}/index.html?backend=auto`, WEBGPU_FLAGS);
  checkConsumerResult(r, 'webgpu');
});

test('the Vite bundle runs on the CPU in Chromium and matches the f64 reference', async () => {
  const r = await runPage(`${server.url}/index.html?backend=cpu`, WEBGPU_FLAGS);
  checkConsumerResult(r, 'cpu');
  // Chromium validates relaxed SIMD, so the bundle's relaxed-SIMD asset loaded.
  assert.equal(r.simd, 'relaxed');
});
