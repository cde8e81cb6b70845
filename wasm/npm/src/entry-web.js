// Browsers (bundled by Vite and others, which emit the asset this URL names) and Deno.
import { createInit } from './api.js';

export { Tensor, FusegraphError, tidy } from './api.js';
export const init = createInit(() => new URL('../dist/fusegraph_wasm_bg.wasm', import.meta.url));
export default init;
