// Backend choice for init(): WebGPU when navigator.gpu gives an adapter and
// this build has the WebGPU backend, else the SIMD128 CPU path. Forcing
// 'webgpu' never falls back: it throws FG_DEVICE_UNAVAILABLE.
//
// Wiring WebGPU later: the wasm build lists 'webgpu' in compiledBackends()
// and exports an async openWebGpu(); openWebGpu() below then calls it.

import { FusegraphError, guard } from './errors.js';

async function probeAdapter() {
  const gpu = globalThis.navigator?.gpu;
  if (!gpu) return { adapter: null, why: 'navigator.gpu is not present' };
  try {
    const adapter = await gpu.requestAdapter();
    return adapter ? { adapter } : { adapter: null, why: 'navigator.gpu.requestAdapter() gave no adapter' };
  } catch (e) {
    return { adapter: null, why: `navigator.gpu.requestAdapter() failed: ${e?.message ?? e}` };
  }
}

async function openWebGpu(raw) {
  if (typeof raw.openWebGpu === 'function') await raw.openWebGpu();
  guard(() => raw.useBackend('webgpu'));
}

/** Resolves to `{ backend, fallback }`: the backend in use, and why 'auto' did not pick WebGPU (else null). */
export async function selectBackend(raw, requested) {
  const built = guard(() => raw.compiledBackends());
  if (requested === 'cpu') {
    guard(() => raw.useBackend('cpu'));
    return { backend: 'cpu', fallback: null };
  }
  if (requested === 'webgpu') {
    if (!built.includes('webgpu')) guard(() => raw.useBackend('webgpu')); // throws the build's reason
    const { adapter, why } = await probeAdapter();
    if (!adapter) throw new FusegraphError('FG_DEVICE_UNAVAILABLE', `init: device webgpu is not available: ${why}`);
    await openWebGpu(raw);
    return { backend: 'webgpu', fallback: null };
  }
  const { adapter, why } = await probeAdapter();
  let fallback = why;
  if (adapter && built.includes('webgpu')) {
    try {
      await openWebGpu(raw);
      return { backend: 'webgpu', fallback: null };
    } catch (e) {
      fallback = `opening WebGPU failed: ${e.message}`;
    }
  } else if (adapter) {
    fallback = 'a WebGPU adapter is present, but this build of fusegraph has no WebGPU backend yet';
    console.info(`fusegraph: using the CPU (SIMD128) backend: ${fallback}`);
  }
  guard(() => raw.useBackend('cpu'));
  return { backend: 'cpu', fallback: `using the CPU (SIMD128) backend: ${fallback}` };
}
