// `fusegraph/image` in browsers: the image builds (the core builds
// plus the JPEG/PNG/WebP codecs and fg.image); bundlers emit its .wasm as an asset.
import { createInit } from './api.js';
import { webSource } from './entry-web.js';

export { Tensor, FusegraphError, tidy } from './api.js';
export const init = createInit(webSource, { image: true });
export default init;
