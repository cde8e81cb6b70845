// Security headers on every response, and the Content-Security-Policy of each
// kind of page. The gallery runs no script at all; the lab page runs only its
// own bundle and may compile the fusegraph wasm ('wasm-unsafe-eval').

const COMMON = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()',
  'Strict-Transport-Security': 'max-age=63072000; includeSubDomains',
};

const BASE = "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

/**
 * Sets the common headers and the CSP of `kind`: 'gallery', 'lab' (pages,
 * with the sha256 source of their inline style) or 'none' (images, errors,
 * data: nothing may run or load from them).
 */
export function securityHeaders(headers, kind, styleHash = null) {
  for (const [k, v] of Object.entries(COMMON)) headers.set(k, v);
  headers.set('Content-Security-Policy', csp(kind, styleHash));
  return headers;
}

function csp(kind, styleHash) {
  const style = styleHash ? `style-src '${styleHash}'` : "style-src 'none'";
  if (kind === 'gallery') {
    return `default-src 'none'; img-src 'self'; ${style}; script-src 'none'; ${BASE}`;
  }
  if (kind === 'lab') {
    return (
      `default-src 'none'; img-src 'self' blob:; ${style}; ` +
      `script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; ${BASE}`
    );
  }
  return `default-src 'none'; ${BASE}; sandbox`;
}

/** The CSP source for an inline <style> body: 'sha256-<base64>'. */
export async function styleSource(css) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(css));
  return `sha256-${btoa(String.fromCharCode(...new Uint8Array(digest)))}`;
}
