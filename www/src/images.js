// The allow-list of source images (the build's manifest) and their bytes,
// read through the read-only IMAGES disk service. A name reaches the service
// only if it matches IMAGE_NAME and is in the manifest, so no request can
// name another file.
import manifest from '../dist/manifest.json';
import { IMAGE_NAME } from './names.js';
import { notFound } from './http.js';

const byName = new Map(manifest.images.map((i) => [i.name, i]));
const bytesOf = new Map(); // name -> Promise<Uint8Array>; the set is the manifest, so bounded

export const images = manifest.images;

/** The manifest entry of `name`, or a 404. */
export function lookup(name) {
  const entry = IMAGE_NAME.test(name) ? byName.get(name) : undefined;
  if (!entry) throw notFound(`no image named ${JSON.stringify(name.slice(0, 64))}`);
  return entry;
}

/** The source bytes of a manifest entry (read once per isolate). */
export function sourceBytes(env, entry) {
  let p = bytesOf.get(entry.name);
  if (!p) {
    p = (async () => {
      const r = await env.IMAGES.fetch(`http://images/${entry.name}`);
      if (!r.ok) throw new Error(`image store answered ${r.status} for ${entry.name}`);
      return new Uint8Array(await r.arrayBuffer());
    })();
    p.catch(() => bytesOf.delete(entry.name));
    bytesOf.set(entry.name, p);
  }
  return p;
}
