// Browsers (bundled by Vite and others, which emit the assets these URLs
// name) and Deno. Only the build init() picks is fetched.
import { createInit } from './api.js';

export { Tensor, FusegraphError, tidy } from './api.js';
export const init = createInit((kind) =>
  kind === 'webgpu'
    ? new URL('../dist/webgpu/fusegraph_wasm_bg.wasm', import.meta.url)
    : new URL('../dist/fusegraph_wasm_bg.wasm', import.meta.url),
);
export default init;
