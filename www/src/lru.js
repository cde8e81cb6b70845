// A least-recently-used map bounded by entry count and total bytes. A Map
// keeps insertion order, so re-inserting on every hit makes its first key
// the least recently used one.
export class Lru {
  constructor({ maxEntries, maxBytes }) {
    this.maxEntries = maxEntries;
    this.maxBytes = maxBytes;
    this.map = new Map();
    this.bytes = 0;
    this.evictions = 0;
  }

  get(key) {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, e);
    return e.value;
  }

  set(key, value, size) {
    if (size > this.maxBytes) return false;
    this.delete(key);
    this.map.set(key, { value, size });
    this.bytes += size;
    while (this.map.size > this.maxEntries || this.bytes > this.maxBytes) {
      const [oldest] = this.map.keys();
      this.delete(oldest);
      this.evictions += 1;
    }
    return true;
  }

  delete(key) {
    const e = this.map.get(key);
    if (e === undefined) return;
    this.map.delete(key);
    this.bytes -= e.size;
  }

  get size() {
    return this.map.size;
  }
}
