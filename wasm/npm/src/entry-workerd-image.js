// `fusegraph/image` on workerd and other Workers runtimes: the image build
// (CPU path plus the JPEG/PNG/WebP codecs and fg.image), imported as a
// compiled module because Workers cannot compile wasm from bytes.
import wasmModule from '../dist/image/fusegraph_wasm_bg.wasm';
import { createInit } from './api.js';

export { Tensor, FusegraphError, tidy } from './api.js';
export const init = createInit((kind) => (kind === 'image' ? wasmModule : null), { image: true });
export default init;
