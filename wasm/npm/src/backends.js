// Backend choice for init(): WebGPU when navigator.gpu gives an adapter and
// this build has the WebGPU backend, else the SIMD128 CPU path. Forcing
// 'webgpu' never falls back: it throws FG_DEVICE_UNAVAILABLE.
//
// The WebGPU build lists 'webgpu' in compiledBackends() and exports an async
// openWebGpu(), which requests the adapter and device through wgpu.

import { FusegraphError, guard, guardAsync } from './errors.js';

/** Asks navigator.gpu for an adapter: `{ adapter }`, or `{ adapter: null, why }`. */
export async function probeAdapter() {
  const gpu = globalThis.navigator?.gpu;
  if (!gpu) return { adapter: null, why: 'navigator.gpu is not present' };
  try {
    const adapter = await gpu.requestAdapter();
    return adapter ? { adapter } : { adapter: null, why: 'navigator.gpu.requestAdapter() gave no adapter' };
  } catch (e) {
    return { adapter: null, why: `navigator.gpu.requestAdapter() failed: ${e?.message ?? e}` };
  }
}

// A module whose one function is (v128, v128, v128) -> v128 with body
// local.get 0, local.get 1, local.get 2, f32x4.relaxed_madd (0xfd 0x105,
// LEB128 0x85 0x02): it validates only where the runtime has relaxed SIMD.
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x08, 0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b, 0x01, 0x7b, // type section
  0x03, 0x02, 0x01, 0x00, // function section
  0x0a, 0x0d, 0x01, 0x0b, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfd, 0x85, 0x02, 0x0b, // code section
]);

/** Whether this runtime validates relaxed SIMD (f32x4.relaxed_madd): picks dist/relaxed/. */
export function probeRelaxedSimd() {
  try {
    return globalThis.WebAssembly?.validate(RELAXED_SIMD_PROBE) === true;
  } catch {
    return false;
  }
}

/** Opens the device and makes it current; resolves to the adapter's description. */
async function openWebGpu(raw) {
  const adapter = await guardAsync(() => raw.openWebGpu());
  guard(() => raw.useBackend('webgpu'));
  return adapter;
}

/**
 * Resolves to `{ backend, fallback, adapter }`: the backend in use, why
 * 'auto' did not pick WebGPU (else null), and the WebGPU adapter's
 * description (else null).
 */
export async function selectBackend(raw, requested, probe, build, note = null) {
  const built = guard(() => raw.compiledBackends());
  if (requested === 'cpu') {
    guard(() => raw.useBackend('cpu'));
    return { backend: 'cpu', fallback: null };
  }
  if (requested === 'webgpu') {
    const { adapter, why } = probe ?? (await probeAdapter());
    if (!adapter) throw new FusegraphError('FG_DEVICE_UNAVAILABLE', `init: device webgpu is not available: ${why}`);
    if (!built.includes('webgpu')) {
      throw new FusegraphError('FG_DEVICE_UNAVAILABLE', `init: device webgpu is not available: ${noGpuBuild(build)}`);
    }
    const described = await openWebGpu(raw);
    return { backend: 'webgpu', fallback: null, adapter: described };
  }
  const { adapter, why } = probe ?? (await probeAdapter());
  let fallback = why;
  if (adapter && built.includes('webgpu')) {
    try {
      const described = await openWebGpu(raw);
      return { backend: 'webgpu', fallback: null, adapter: described };
    } catch (e) {
      fallback = `opening WebGPU failed: ${e.message}`;
    }
  } else if (adapter) {
    fallback = `a WebGPU adapter is present, but ${note ?? noGpuBuild(build)}`;
  }
  guard(() => raw.useBackend('cpu'));
  const isa = build === 'relaxed' ? 'relaxed SIMD' : 'SIMD128';
  return { backend: 'cpu', fallback: `using the CPU (${isa}) backend: ${fallback}` };
}

function noGpuBuild(build) {
  return build === 'cpu' || build === 'relaxed' || build === 'image'
    ? 'the CPU-only build of fusegraph is loaded (by an earlier init(), or this entry point has no WebGPU build)'
    : 'this build of fusegraph has no WebGPU backend';
}
