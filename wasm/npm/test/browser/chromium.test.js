// The package in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; no browser download): the WebGPU path on SwiftShader's
// Vulkan adapter and the CPU path (the relaxed-SIMD build, which Chromium
// validates, and the SIMD128 one), each checked against the f64 reference,
// plus init()'s choice of backend and build with and without an adapter.
// The page is served from 127.0.0.1 (a secure context, which WebGPU needs).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { runPage, WEBGPU_FLAGS } from './launch.js';
import { serve } from './server.mjs';
import * as ref from '../reference.js';
import { CASES, inputsOf } from './cases.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let server;
before(async () => {
  server = await serve(root);
});
after(async () => {
  await server?.close();
});

function checkAgainstReference(result, device) {
  assert.equal(result.error, undefined, `init failed: ${result.error}\n${result.logs?.join('\n')}`);
  assert.equal(result.results.length, CASES.length);
  for (const [i, c] of CASES.entries()) {
    const r = result.results[i];
    assert.equal(r.name, c.name);
    assert.equal(r.error, undefined, `${c.name}: ${r.error}`);
    assert.equal(r.device, device, `${c.name}: ran on ${r.device}`);
    assert.equal(r.intoMatches, true, `${c.name}: toArray(into) on ${device} differs from toArray()`);
    const want = c.reference(ref, inputsOf(c));
    ref.assertClose(`${c.name} on ${device}`, r.values, want.data, want.tol);
  }
}

const page = (backend) => `${server.url}/test/browser/page.html?backend=${backend}`;

test('WebGPU (SwiftShader) in Chromium matches the f64 reference', async () => {
  const result = await runPage(page('webgpu'), WEBGPU_FLAGS);
  assert.equal(result.backend, 'webgpu', JSON.stringify(result.error ?? result.fallback));
  // wgpu's description of a browser adapter has no name; the browser's own says SwiftShader.
  assert.match(result.adapter, /BrowserWebGpu, Cpu/);
  assert.match(result.gpu?.architecture ?? '', /swiftshader/i);
  checkAgainstReference(result, 'wgpu');
});

test('the CPU path in Chromium loads the relaxed-SIMD build and matches the f64 reference', async () => {
  const result = await runPage(page('cpu'), WEBGPU_FLAGS);
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.backend, 'cpu');
  // Chromium has relaxed SIMD on by default (since 114): the probe validates.
  assert.equal(result.simd, 'relaxed');
  checkAgainstReference(result, 'cpu');
});

test("the CPU path with init({ simd: 'simd128' }) in Chromium matches the f64 reference", async () => {
  const result = await runPage(`${page('cpu')}&simd=simd128`, WEBGPU_FLAGS);
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.backend, 'cpu');
  assert.equal(result.simd, 'simd128');
  checkAgainstReference(result, 'cpu');
});

test("init({ backend: 'auto' }) picks WebGPU when an adapter exists", async () => {
  const result = await runPage(page('auto'), WEBGPU_FLAGS);
  assert.equal(result.backend, 'webgpu', result.fallback ?? result.error);
  assert.equal(result.fallback, null);
  checkAgainstReference(result, 'wgpu');
});

test("init({ backend: 'auto' }) falls back to the CPU when no adapter is given, and says why", async () => {
  const result = await runPage(page('auto'), []);
  assert.equal(result.backend, 'cpu', result.error);
  assert.match(result.fallback, /CPU \(relaxed SIMD\).*(no adapter|navigator\.gpu)/);
  assert.equal(result.simd, 'relaxed');
  checkAgainstReference(result, 'cpu');
});

test("init({ backend: 'webgpu' }) without an adapter throws FG_DEVICE_UNAVAILABLE", async () => {
  const result = await runPage(page('webgpu'), []);
  assert.match(result.error ?? '', /^FG_DEVICE_UNAVAILABLE: /);
});

test("init({ backend: 'auto' }) falls back to the CPU build when the WebGPU build cannot be loaded", async () => {
  const result = await runPage(`${page('auto')}&gpuwasm=/missing/fusegraph_wasm_bg.wasm`, WEBGPU_FLAGS);
  assert.equal(result.backend, 'cpu', result.error);
  assert.match(result.fallback, /adapter is present, but loading the WebGPU build failed/);
  checkAgainstReference(result, 'cpu');
});

test("init({ backend: 'webgpu' }) throws FG_DEVICE_UNAVAILABLE when the WebGPU build cannot be loaded", async () => {
  const result = await runPage(`${page('webgpu')}&gpuwasm=/missing/fusegraph_wasm_bg.wasm`, WEBGPU_FLAGS);
  assert.match(result.error ?? '', /^FG_DEVICE_UNAVAILABLE: .*loading the WebGPU build failed/);
});
