// GET/HEAD /img/<name>?w=&q=&fmt=&blur=&sharpen= : a transformed copy of a
// shipped image, from the response cache under its canonical key, or made
// by the fusegraph pipeline (one request per key does the work while the
// others wait for it) and stored.
import { lookup, sourceBytes } from '../images.js';
import { canonicalParams, canonicalQuery, parseParams } from '../params.js';
import { responseCache } from '../cache.js';
import { etagFor, matchesIfNoneMatch } from '../etag.js';
import { checkBudget, transform } from '../pipeline.js';
import { securityHeaders } from '../headers.js';
import { stats } from '../stats.js';

const CACHE_CONTROL = 'public, max-age=86400, stale-while-revalidate=604800';
const CONTENT_TYPE = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };
const inFlight = new Map(); // canonical key -> Promise<entry>

export async function imageRoute(request, env, ctx, name, url) {
  const src = lookup(name);
  const c = canonicalParams(parseParams(url.searchParams), src.width);
  checkBudget(src, c);
  // A fixed origin and the source's content hash: the key depends on nothing
  // the client sends but the validated parameters.
  const key = `https://cache.fusegraph.internal/img/${src.name}?${canonicalQuery(c)}&v=${src.hash}`;
  const etag = await etagFor(key);
  const store = await responseCache();

  if (matchesIfNoneMatch(request.headers.get('If-None-Match'), etag)) {
    stats.not_modified += 1;
    const h = securityHeaders(new Headers({ ETag: etag, 'Cache-Control': CACHE_CONTROL }), 'none');
    return new Response(null, { status: 304, headers: h });
  }

  let entry = await store.match(key);
  let state = 'HIT';
  let timing = null;
  if (entry) {
    stats.hits += 1;
  } else {
    state = 'MISS';
    stats.misses += 1;
    let pending = inFlight.get(key);
    if (!pending) {
      pending = produce(env, src, c, etag).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
      ctx.waitUntil(pending.then((made) => store.put(key, made.entry)).catch(() => {}));
    }
    ({ entry, timing } = await pending);
  }

  const headers = securityHeaders(new Headers(entry.headers), 'none');
  headers.set('X-Cache', state);
  headers.set('X-Cache-Store', store.name);
  headers.set('X-Cache-Key', key.slice(key.indexOf('/img/')));
  if (timing) headers.set('Server-Timing', timing);
  return new Response(request.method === 'HEAD' ? null : entry.body, { status: entry.status, headers });
}

async function produce(env, src, c, etag) {
  const bytes = await sourceBytes(env, src);
  const r = await transform(bytes, c);
  stats.transforms += 1;
  // workerd's clock stands still during synchronous work (a Spectre
  // mitigation), so there the pipeline's own timings read 0: send only
  // the ones that measured something.
  const t = r.timings ?? {};
  const timing = ['decode', 'process', 'encode']
    .filter((k) => Number.isFinite(t[k]) && t[k] > 0)
    .map((k) => `${k};dur=${t[k].toFixed(2)}`)
    .join(', ');
  const entry = {
    status: 200,
    headers: [
      ['Content-Type', CONTENT_TYPE[r.format] ?? CONTENT_TYPE[c.fmt]],
      ['Cache-Control', CACHE_CONTROL],
      ['ETag', etag],
      ['X-Image-Size', `${r.width}x${r.height}`],
    ],
    body: r.bytes,
  };
  return { entry, timing };
}
