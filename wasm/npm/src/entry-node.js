// Node (and Deno through its node condition): the .wasm is read from the
// package. The WebGPU build is used where navigator.gpu gives an adapter
// (Deno with a GPU; Node 20 has no navigator.gpu).
import { readFile } from 'node:fs/promises';
import { createInit } from './api.js';

export { Tensor, FusegraphError, tidy } from './api.js';
const FILES = { cpu: '../dist/fusegraph_wasm_bg.wasm', webgpu: '../dist/webgpu/fusegraph_wasm_bg.wasm' };
export const init = createInit((kind) => readFile(new URL(FILES[kind], import.meta.url)));
export default init;
