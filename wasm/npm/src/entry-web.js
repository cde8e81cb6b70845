// Browsers (bundled by Vite and others, which emit the assets these URLs
// name) and Deno. Only the build init() picks is fetched.
import { createInit } from './api.js';

export { Tensor, FusegraphError, tidy } from './api.js';
// Each URL is written out in full so that bundlers see and emit the asset.
/** The URL of build `kind`'s .wasm. */
export const webSource = (kind) =>
  kind === 'webgpu'
    ? new URL('../dist/webgpu/fusegraph_wasm_bg.wasm', import.meta.url)
    : kind === 'image'
      ? new URL('../dist/image/fusegraph_wasm_bg.wasm', import.meta.url)
      : kind === 'image-webgpu'
        ? new URL('../dist/image-webgpu/fusegraph_wasm_bg.wasm', import.meta.url)
        : kind === 'relaxed'
          ? new URL('../dist/relaxed/fusegraph_wasm_bg.wasm', import.meta.url)
          : new URL('../dist/fusegraph_wasm_bg.wasm', import.meta.url);
export const init = createInit(webSource);
export default init;
