// Fixed files: the lab's browser bundle and wasm (from the read-only ASSETS
// disk service), the original photos for the lab (/src/<name>), the icon.
// Only names on the allow-lists here or in the manifest are ever read.
import { lookup, sourceBytes } from '../images.js';
import { etagFor, matchesIfNoneMatch } from '../etag.js';
import { securityHeaders } from '../headers.js';
import { notFound } from '../http.js';

const ASSETS = {
  'lab.js': 'text/javascript; charset=utf-8',
  'fusegraph_wasm_bg.wasm': 'application/wasm',
  'fusegraph_webgpu_bg.wasm': 'application/wasm',
};
const SOURCE_TYPE = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };
const ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2a6"/></svg>';

function respond(request, body, type, etag, cacheControl) {
  const headers = securityHeaders(new Headers({ 'Content-Type': type, 'Cache-Control': cacheControl }), 'none');
  if (etag) headers.set('ETag', etag);
  if (etag && matchesIfNoneMatch(request.headers.get('If-None-Match'), etag)) {
    return new Response(null, { status: 304, headers });
  }
  return new Response(request.method === 'HEAD' ? null : body, { headers });
}

export async function assetRoute(request, env, file) {
  const type = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
  if (!type) throw notFound(`no asset named ${JSON.stringify(file.slice(0, 64))}`);
  const r = await env.ASSETS.fetch(`http://assets/${file}`);
  if (!r.ok) throw notFound(`asset ${file} is not built`);
  return respond(request, r.body, type, null, 'no-cache');
}

export async function sourceRoute(request, env, name) {
  const src = lookup(name);
  const etag = await etagFor(`src:${src.hash}`);
  return respond(request, await sourceBytes(env, src), SOURCE_TYPE[src.format], etag, 'public, max-age=86400');
}

export function iconRoute(request) {
  return respond(request, ICON, 'image/svg+xml', null, 'public, max-age=86400');
}
