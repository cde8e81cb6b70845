// workerd and other Workers runtimes: wasm cannot be compiled from bytes at
// run time there, so the .wasm is imported as a compiled module. Workers
// have no WebGPU: only the CPU build is imported (the SIMD128 one: a second
// module would double the Worker's wasm, so workerd gets no relaxed build).
import wasmModule from '../dist/fusegraph_wasm_bg.wasm';
import { createInit } from './api.js';

export { Tensor, FusegraphError, tidy } from './api.js';
export const init = createInit((kind) => (kind === 'cpu' ? wasmModule : null));
export default init;
