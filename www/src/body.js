// Reads a request body with a hard cap: a Content-Length over the cap is
// refused before reading, and a body without one is counted as it streams
// and cut off at the cap, so memory never holds more than MAX_BODY_BYTES.
import { HttpError } from './http.js';
import { MAX_BODY_BYTES } from './limits.js';

const tooLarge = () => new HttpError(413, `request bodies are limited to ${MAX_BODY_BYTES} bytes`);

export async function readCapped(request) {
  const declared = request.headers.get('Content-Length');
  if (declared !== null && !/^[0-9]{1,12}$/.test(declared)) throw new HttpError(400, 'Content-Length is not a number');
  if (declared !== null && Number(declared) > MAX_BODY_BYTES) throw tooLarge();
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      // The client went away or sent a malformed body: its fault, not ours.
      throw new HttpError(400, `the request body could not be read: ${e?.message ?? e}`);
    }
    const { done, value } = chunk;
    if (done) break;
    total += value.byteLength;
    if (total > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** True when a request carries (or announces) a body. */
export function hasBody(request) {
  const len = request.headers.get('Content-Length');
  return request.body !== null && !(len === '0');
}
