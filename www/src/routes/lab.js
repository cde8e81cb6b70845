// GET /lab : the browser lab. The page is static; its script (dist/public/lab.js,
// built from www/lab/lab.js) runs the same fusegraph transform in the browser,
// on WebGPU where the browser has it and on the wasm CPU path otherwise, and
// shows the timings of both next to the server's.
import { images } from '../images.js';
import { securityHeaders, styleSource } from '../headers.js';
import { CSS } from '../page/styles.js';
import { esc } from '../page/html.js';

let styleHash = null;

export async function labRoute() {
  styleHash ??= await styleSource(CSS);
  const options = images.map((i) => `<option value="${esc(i.name)}">${esc(i.name)} (${i.width}x${i.height})</option>`).join('');
  const body =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><title>fusegraph image lab</title>' +
    `<link rel="icon" href="/favicon.svg"><style>${CSS}</style>` +
    '<script type="module" src="/assets/lab.js"></script></head><body>' +
    '<h1>fusegraph image lab</h1><p>The gallery\'s pipeline (decode, resize, blur/sharpen, encode), run here in the browser. ' +
    '<a href="/">Back to the gallery</a></p>' +
    `<form id="params"><label>image <select name="name">${options}</select></label> ` +
    '<label>w <input name="w" type="number" min="1" max="8192" value="640"></label> ' +
    '<label>q <input name="q" type="number" min="1" max="100" value="80"></label> ' +
    '<label>fmt <select name="fmt"><option>jpeg</option><option>png</option><option>webp</option></select></label> ' +
    '<label>blur <input name="blur" type="number" min="0" max="20" step="0.5" value="0"></label> ' +
    '<label>sharpen <input name="sharpen" type="number" min="0" max="5" step="0.25" value="0"></label> ' +
    '<button type="submit">Run</button></form>' +
    '<p id="status">loading…</p>' +
    '<table id="timings"><thead><tr><th>where</th><th>backend</th><th>decode ms</th><th>process ms</th><th>encode ms</th><th>total ms (median)</th><th>output</th></tr></thead><tbody></tbody></table>' +
    '<p><img id="preview" alt="the last output of the pipeline" width="640" height="427"></p></body></html>';
  const headers = securityHeaders(new Headers({ 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache' }), 'lab', styleHash);
  return new Response(body, { headers });
}
