// Node (and Deno through its node condition): the .wasm is read from the package.
import { readFile } from 'node:fs/promises';
import { createInit } from './api.js';

export { Tensor, FusegraphError, tidy } from './api.js';
export const init = createInit(() => readFile(new URL('../dist/fusegraph_wasm_bg.wasm', import.meta.url)));
export default init;
