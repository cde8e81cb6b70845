// HTTP errors the worker answers with, and the plain-text error response.
import { securityHeaders } from './headers.js';

/** An error with the HTTP status and message the client gets. */
export class HttpError extends Error {
  constructor(status, message, headers = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

export const badRequest = (m) => new HttpError(400, m);
export const notFound = (m) => new HttpError(404, m);

export function errorResponse(status, message, extra = {}) {
  const headers = new Headers({
    'Content-Type': 'text/plain; charset=utf-8',
    'Cache-Control': 'no-store',
    ...extra,
  });
  securityHeaders(headers, 'none');
  return new Response(`${status} ${message}\n`, { status, headers });
}
