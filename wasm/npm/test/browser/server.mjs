// A static file server on 127.0.0.1 for the browser tests (node:http, no
// dependencies): serves `root`, with the MIME types the pages need
// (application/wasm lets the loader compile while it downloads).

import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.css': 'text/css',
};

/** Serves `root` on a free port; resolves to `{ url, close() }`. */
export async function serve(root) {
  const base = normalize(root + sep);
  const server = createServer(async (req, res) => {
    const path = normalize(join(base, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    if (!path.startsWith(base)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(path);
      res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}
