// Loaded by chromium.test.js: `?backend=webgpu|cpu|auto[&simd=auto|relaxed|simd128]`. Puts what it saw
// into `window.fusegraphResult` for the test to read.
import { init } from '../../src/entry-web.js';
import { runCases } from './cases.js';

const params = new URLSearchParams(location.search);
const backend = params.get('backend') ?? 'auto';
// `gpuwasm`: where the WebGPU build's .wasm is (to test a bundle that lacks it).
const wasmWebGpu = params.get('gpuwasm') ?? undefined;
const simd = params.get('simd') ?? undefined;
// Which adapter the browser offers, as the browser describes it.
async function gpuInfo() {
  const a = await globalThis.navigator.gpu?.requestAdapter();
  return a ? { vendor: a.info?.vendor, architecture: a.info?.architecture } : null;
}
try {
  const fg = await init({ backend, wasmWebGpu, simd });
  const results = await runCases(fg);
  window.fusegraphResult = { backend: fg.backend, simd: fg.simd, adapter: fg.adapter, gpu: await gpuInfo(), fallback: fg.fallback, results };
} catch (e) {
  window.fusegraphResult = { error: `${e.code ?? e.name}: ${e.message}` };
}
