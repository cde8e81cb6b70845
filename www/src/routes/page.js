// GET / : the gallery, rendered on the server and streamed: the <head> (inline
// CSS, the preload of the hero image) goes out first so the browser starts
// fetching the LCP image while the rest is written. Every <img> has width
// and height (no layout shift) and a srcset of the endpoint's canonical
// widths, so the page only asks for URLs that are cache keys already.
import { images } from '../images.js';
import { widthsFor } from '../params.js';
import { securityHeaders, styleSource } from '../headers.js';
import { CSS } from '../page/styles.js';
import { CAPTIONS, ORDER } from '../page/captions.js';
import { esc } from '../page/html.js';

const HERO_SIZES = '(max-width: 1040px) 100vw, 1008px';
const CARD_SIZES = '(max-width: 680px) 100vw, 330px';
let styleHash = null;

function ordered() {
  const rank = (n) => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
  return [...images].sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name));
}

// Only the width differs from the endpoint's defaults (q 80, jpeg, no
// filters); it is already a snapped width, so each URL is one cache key.
const url = (img, w) => `/img/${img.name}?w=${w}`;

const defaultWidth = (img) => widthsFor(img.width).find((w) => w >= 640) ?? img.width;
const srcset = (img) => widthsFor(img.width).map((w) => `${url(img, w)} ${w}w`).join(', ');

function figure(img, { hero }) {
  const [alt, credit] = CAPTIONS[img.name] ?? [img.name, ''];
  const def = defaultWidth(img);
  const loading = hero ? 'fetchpriority="high"' : 'loading="lazy" decoding="async"';
  return (
    `<figure${hero ? ' class="hero"' : ''}><img src="${esc(url(img, def))}" srcset="${esc(srcset(img))}" ` +
    `sizes="${hero ? HERO_SIZES : CARD_SIZES}" width="${img.width}" height="${img.height}" alt="${esc(alt)}" ${loading}>` +
    `<figcaption>${esc(alt)}${credit ? ` — ${esc(credit)}` : ''}</figcaption></figure>`
  );
}

export async function pageRoute(request) {
  styleHash ??= await styleSource(CSS);
  const list = ordered();
  const [hero, ...rest] = list;
  const headers = securityHeaders(
    new Headers({ 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache' }),
    'gallery',
    styleHash,
  );
  if (request.method === 'HEAD') return new Response(null, { headers });

  const head =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1">' +
    '<title>fusegraph edge gallery</title><link rel="icon" href="/favicon.svg">' +
    '<meta name="description" content="Photos resized at the edge by the fusegraph wasm image pipeline">' +
    (hero
      ? `<link rel="preload" as="image" href="${esc(url(hero, defaultWidth(hero)))}" imagesrcset="${esc(srcset(hero))}" imagesizes="${HERO_SIZES}" fetchpriority="high">`
      : '') +
    `<style>${CSS}</style></head><body><header><h1>fusegraph edge gallery</h1>` +
    '<p>Rendered by a Worker; every image is resized by the fusegraph wasm pipeline inside it and served from the cache. ' +
    '<a href="/lab">Lab: the same pipeline in your browser</a></p></header><main>';

  // A pull stream: each chunk is rendered when the connection asks for the
  // next one, so the <head> (with the LCP preload) leaves first and nothing
  // outlives the response (no waitUntil, no writer held by the request).
  const enc = new TextEncoder();
  const parts = [
    () => head,
    () => (hero ? figure(hero, { hero: true }) : ''),
    () => '<ul class="grid">',
    ...rest.map((img) => () => `<li>${figure(img, { hero: false })}</li>`),
    () => `</ul></main><footer><p>${list.length} photos; licences in images/LICENSES.md.</p></footer></body></html>`,
  ];
  let next = 0;
  const readable = new ReadableStream({
    pull(controller) {
      if (next < parts.length) controller.enqueue(enc.encode(parts[next++]()));
      else controller.close();
    },
  });
  return new Response(readable, { headers });
}
