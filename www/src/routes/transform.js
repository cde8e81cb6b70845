// POST /api/transform?w=&q=&fmt=&blur=&sharpen= with an image as the body:
// the same pipeline on uploaded bytes (the lab page compares its own timings
// with it). Uploads are never cached, so they cannot fill or poison the
// cache. Limits: the body cap, then the header's pixel limits and the work
// budget, all checked before decoding.
import { readCapped } from '../body.js';
import { HttpError } from '../http.js';
import { canonicalParams, parseParams } from '../params.js';
import { checkBudget, probe, transform } from '../pipeline.js';
import { securityHeaders } from '../headers.js';

const CONTENT_TYPE = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

export async function transformRoute(request, url) {
  const p = parseParams(url.searchParams);
  const bytes = await readCapped(request);
  if (bytes.byteLength === 0) throw new HttpError(400, 'the request body must be an image (JPEG, PNG or WebP)');
  const src = await probe(bytes);
  const c = canonicalParams(p, src.width);
  checkBudget(src, c);
  const r = await transform(bytes, c);
  const headers = securityHeaders(
    new Headers({
      'Content-Type': CONTENT_TYPE[r.format] ?? CONTENT_TYPE[c.fmt],
      'Cache-Control': 'no-store',
      'X-Image-Size': `${r.width}x${r.height}`,
    }),
    'none',
  );
  return new Response(r.bytes, { status: 200, headers });
}
