// Strong ETags derived from what determines the bytes (source hash, canonical
// parameters, pipeline version), so they are known before any work and a
// revalidation (If-None-Match) is answered 304 without decoding anything.
import { MAX_IF_NONE_MATCH } from './limits.js';

/** Bump when the pipeline's output for the same input changes. */
export const PIPELINE_VERSION = 'fg-image-1';

export async function etagFor(key) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${PIPELINE_VERSION}\n${key}`));
  const hex = [...new Uint8Array(digest).subarray(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `"${hex}"`;
}

/** If-None-Match matching (weak comparison, as RFC 9110 asks for this header). */
export function matchesIfNoneMatch(header, etag) {
  if (!header || header.length > MAX_IF_NONE_MATCH) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}
