// The edge demo Worker (module format): routing, request limits, and the one
// place every error becomes a response, so nothing a client sends can make it
// throw out of fetch().
import { errorResponse, HttpError } from './http.js';
import { securityHeaders } from './headers.js';
import { hasBody } from './body.js';
import { MAX_URL_LENGTH } from './limits.js';
import { pageRoute } from './routes/page.js';
import { labRoute } from './routes/lab.js';
import { imageRoute } from './routes/img.js';
import { transformRoute } from './routes/transform.js';
import { assetRoute, iconRoute, sourceRoute } from './routes/static.js';
import { responseCache } from './cache.js';
import { countStatus, stats } from './stats.js';
import { wasmMemoryBytes } from './pipeline.js';

const READ = ['GET', 'HEAD'];

function allow(request, methods) {
  if (!methods.includes(request.method)) {
    throw new HttpError(405, `${request.method} is not allowed here`, { Allow: methods.join(', ') });
  }
  if (request.method !== 'POST' && hasBody(request)) throw new HttpError(413, `${request.method} requests take no body`);
}

async function route(request, env, ctx) {
  if (request.url.length > MAX_URL_LENGTH) throw new HttpError(414, `URLs are limited to ${MAX_URL_LENGTH} characters`);
  const url = new URL(request.url);
  const path = url.pathname;
  if (path === '/') {
    allow(request, READ);
    if (url.search) throw new HttpError(400, 'the gallery takes no parameters');
    return pageRoute(request);
  }
  if (path.startsWith('/img/')) {
    allow(request, READ);
    return imageRoute(request, env, ctx, path.slice(5), url);
  }
  if (path === '/lab') {
    allow(request, READ);
    return labRoute();
  }
  if (path === '/api/transform') {
    allow(request, ['POST']);
    return transformRoute(request, url);
  }
  if (path.startsWith('/src/')) {
    allow(request, READ);
    return sourceRoute(request, env, path.slice(5));
  }
  if (path.startsWith('/assets/')) {
    allow(request, READ);
    return assetRoute(request, env, path.slice(8));
  }
  if (path === '/favicon.svg' || path === '/favicon.ico') {
    allow(request, READ);
    return iconRoute(request);
  }
  if (path === '/__stats') {
    allow(request, READ);
    const store = await responseCache();
    const body = JSON.stringify({ ...stats, store: store.name, cache: store.stats(), wasm_memory_bytes: wasmMemoryBytes() });
    const headers = securityHeaders(new Headers({ 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }), 'none');
    return new Response(body, { headers });
  }
  throw new HttpError(404, `nothing at ${path.slice(0, 128)}`);
}

export default {
  async fetch(request, env, ctx) {
    stats.requests += 1;
    stats.started ??= new Date().toISOString();
    let res;
    try {
      res = await route(request, env, ctx);
    } catch (e) {
      if (e instanceof HttpError) {
        res = errorResponse(e.status, e.message, e.headers);
      } else {
        // A bug, not a client error: log it, answer 500, keep serving.
        console.error('internal error:', e?.stack ?? e);
        res = errorResponse(500, 'internal error');
      }
    }
    countStatus(res.status);
    return res;
  },
};
