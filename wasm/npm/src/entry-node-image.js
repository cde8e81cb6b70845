// `fusegraph/image` on Node and Deno: the image builds (the core builds
// plus the JPEG/PNG/WebP codecs and fg.image), read from the package.
import { createInit } from './api.js';
import { nodeSource } from './entry-node.js';

export { Tensor, FusegraphError, tidy } from './api.js';
export const init = createInit(nodeSource, { image: true });
export default init;
