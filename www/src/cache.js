// The response cache behind one interface: `match(key)` gives a stored
// `{ status, headers, body }` or undefined, `put(key, entry)` stores one.
//
// In production that is the Workers Cache API (caches.default). workerd
// run locally without a cache service accepts cache.put() but stores
// nothing (every match() misses), so on first use the worker checks with a
// probe entry, and when the Cache API does not keep it, falls back to a
// bounded in-memory LRU in this isolate. `store` says which one is in use
// (it is in /__stats and in the X-Cache-Store header).
import { Lru } from './lru.js';
import { CACHE_MAX_BYTES, CACHE_MAX_ENTRIES } from './limits.js';

const PROBE_KEY = 'https://cache.fusegraph.internal/__probe';

class CacheApiStore {
  constructor(cache) {
    this.cache = cache;
    this.name = 'cache-api';
  }

  async match(key) {
    const r = await this.cache.match(key);
    if (!r) return undefined;
    return { status: r.status, headers: [...r.headers], body: new Uint8Array(await r.arrayBuffer()) };
  }

  async put(key, entry) {
    await this.cache.put(key, new Response(entry.body, { status: entry.status, headers: entry.headers }));
  }

  stats() {
    return {};
  }
}

class MemoryStore {
  constructor() {
    this.lru = new Lru({ maxEntries: CACHE_MAX_ENTRIES, maxBytes: CACHE_MAX_BYTES });
    this.name = 'memory-lru';
  }

  async match(key) {
    return this.lru.get(key);
  }

  async put(key, entry) {
    const headerBytes = entry.headers.reduce((s, [k, v]) => s + k.length + v.length, 0);
    this.lru.set(key, entry, entry.body.byteLength + headerBytes + key.length);
  }

  stats() {
    return { entries: this.lru.size, bytes: this.lru.bytes, evictions: this.lru.evictions, max_bytes: this.lru.maxBytes };
  }
}

async function cacheApiKeeps(cache) {
  try {
    const marker = String(Date.now());
    await cache.put(PROBE_KEY, new Response(marker, { headers: { 'Cache-Control': 'public, max-age=60' } }));
    const back = await cache.match(PROBE_KEY);
    return back !== undefined && (await back.text()) === marker;
  } catch {
    return false;
  }
}

let chosen = null;

/** The store of this isolate, chosen once. */
export function responseCache() {
  chosen ??= (async () => {
    const cache = globalThis.caches?.default;
    if (cache && (await cacheApiKeeps(cache))) return new CacheApiStore(cache);
    return new MemoryStore();
  })();
  return chosen;
}
