// The wasm-bindgen exports of this realm's one fusegraph instance. Five
// builds ship: dist/ (the SIMD128 CPU path only: what Node, Deno and workerd
// load when there is no WebGPU adapter), dist/relaxed/ (the same compiled
// with relaxed SIMD too, loaded instead of dist/ where the runtime validates
// relaxed SIMD: see probeRelaxedSimd in backends.js), dist/webgpu/ (the
// SIMD128 CPU path plus the WebGPU backend, loaded when init() is to use
// WebGPU), and the two image builds dist/image/ and dist/image-webgpu/ (the
// same two plus the image codecs and ops, loaded by init({ image: true }),
// which the `fusegraph/image` entry points pass). Each has its own
// wasm-bindgen glue, so every module of the package reaches the exports
// through `raw` below, a live binding that `load()` sets — never by
// importing a dist/ file itself, which could reach a build that was never
// instantiated.

import * as cpu from '../dist/fusegraph_wasm.js';

/** The glue of the loaded build (the CPU glue, uninstantiated, before `load`). */
export let raw = cpu;

/** 'cpu', 'relaxed', 'webgpu', 'image' or 'image-webgpu' once a build is loaded, else null. */
export let build = null;

/** The loaded instance's WebAssembly.Memory (null before `load`). */
export let memory = null;

/**
 * Instantiates build `kind` from `source` (a URL, bytes, a Response or a
 * compiled Module, as wasm-bindgen's loader takes). The relaxed, WebGPU and
 * image glue are imported only here, so bundlers split them off the CPU path.
 */
export async function load(kind, source) {
  // Each import is written out so that bundlers see (and may split) it.
  const glue =
    kind === 'webgpu'
      ? await import('../dist/webgpu/fusegraph_wasm.js')
      : kind === 'image'
        ? await import('../dist/image/fusegraph_wasm.js')
        : kind === 'image-webgpu'
          ? await import('../dist/image-webgpu/fusegraph_wasm.js')
          : kind === 'relaxed'
            ? await import('../dist/relaxed/fusegraph_wasm.js')
            : cpu;
  const exports = await glue.default({ module_or_path: await source });
  raw = glue;
  build = kind;
  memory = exports?.memory ?? null;
}
