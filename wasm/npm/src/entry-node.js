// Node (and Deno through its node condition): the .wasm is read from the
// package. The WebGPU build is used where navigator.gpu gives an adapter
// (Deno with a GPU; Node 20 has no navigator.gpu).
import { readFile } from 'node:fs/promises';
import { createInit } from './api.js';

export { Tensor, FusegraphError, tidy } from './api.js';
const FILES = {
  cpu: '../dist/fusegraph_wasm_bg.wasm',
  relaxed: '../dist/relaxed/fusegraph_wasm_bg.wasm',
  webgpu: '../dist/webgpu/fusegraph_wasm_bg.wasm',
  image: '../dist/image/fusegraph_wasm_bg.wasm',
  'image-webgpu': '../dist/image-webgpu/fusegraph_wasm_bg.wasm',
};
/** The bytes of build `kind`'s .wasm, read from the package. */
export const nodeSource = (kind) => readFile(new URL(FILES[kind], import.meta.url));
export const init = createInit(nodeSource);
export default init;
