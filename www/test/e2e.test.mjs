// End-to-end: the demo served by workerd, loaded in headless Chromium.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ORIGIN, startServer } from './server.mjs';
import { launch, watch } from './browser.mjs';

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('the gallery renders, every image loads, nothing shifts, and the console stays clean', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const problems = watch(page);
  const response = await page.goto(ORIGIN, { waitUntil: 'load' });
  assert.equal(response.status(), 200);
  const csp = response.headers()['content-security-policy'];
  assert.match(csp, /script-src 'none'/);
  assert.equal(response.headers()['x-content-type-options'], 'nosniff');
  assert.equal(await page.title(), 'fusegraph edge gallery');

  const boxes = await page.$$eval('img', (imgs) => imgs.map((i) => ({ w: i.getAttribute('width'), h: i.getAttribute('height'), srcset: i.srcset })));
  assert.ok(boxes.length >= 5, `expected the gallery's photos, found ${boxes.length} <img>`);
  for (const b of boxes) {
    assert.ok(Number(b.w) > 0 && Number(b.h) > 0, `an <img> lacks width/height: ${JSON.stringify(b)}`);
    assert.match(b.srcset, /\/img\/[a-z0-9-]+\.(jpg|png|webp)\?w=\d+ \d+w/);
  }
  assert.equal(await page.$$eval('link[rel=preload][as=image]', (l) => l.length), 1, 'the LCP image is preloaded');

  // Lazy images load once scrolled to; then every one must have decoded.
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.waitForFunction(() => [...document.images].every((i) => i.complete), null, { timeout: 20_000 });
  const broken = await page.$$eval('img', (imgs) => imgs.filter((i) => i.naturalWidth === 0).map((i) => i.currentSrc));
  assert.deepEqual(broken, [], 'images that did not decode');
  const shift = await page.evaluate(
    () =>
      new Promise((resolve) => {
        let total = 0;
        new PerformanceObserver((l) => {
          for (const e of l.getEntries()) if (!e.hadRecentInput) total += e.value;
        }).observe({ type: 'layout-shift', buffered: true });
        setTimeout(() => resolve(total), 300);
      }),
  );
  console.log(`gallery: ${boxes.length} images loaded, layout shift ${shift.toFixed(4)}`);
  assert.ok(shift < 0.05, `cumulative layout shift ${shift}`);
  assert.deepEqual(problems, []);
  await context.close();
});

/** Loads /lab in `b`, waits for its run, and resolves to the timing rows. */
async function labRows(b, query = '', timeout = 60_000) {
  const context = await b.newContext();
  const page = await context.newPage();
  const problems = watch(page);
  const response = await page.goto(`${ORIGIN}/lab${query}`);
  assert.equal(response.status(), 200);
  assert.match(response.headers()['content-security-policy'], /script-src 'self' 'wasm-unsafe-eval'/);
  await page.waitForSelector('#status[data-done]', { timeout });
  const status = await page.textContent('#status');
  assert.match(status, /^done/, status);
  const rows = await page.$$eval('#timings tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.ok(await page.$eval('#preview', (i) => i.complete && i.naturalWidth > 0), 'the output preview decoded');
  assert.deepEqual(problems, []);
  await context.close();
  return rows;
}

test('the lab page runs the pipeline in the browser and shows its timings', async () => {
  const rows = await labRows(browser);
  console.log('lab timings, no WebGPU adapter (where, backend, decode, process, encode, total ms, output):');
  for (const r of rows) console.log(`  ${r.join(' | ')}`);
  const cpu = rows.find((r) => r[0] === 'browser' && r[1] === 'cpu');
  assert.ok(cpu, `no browser CPU row in ${JSON.stringify(rows)}`);
  assert.ok(Number(cpu[5]) > 0, `CPU total ${cpu[5]}`);
  assert.ok(rows.some((r) => r[1] === 'webgpu'), 'the WebGPU row (timings or why not) is shown');
  assert.ok(rows.some((r) => r[0].startsWith('worker') && !/^\d{3}:/.test(r[6])), 'the worker answered');
});

test('with a WebGPU adapter (SwiftShader) the lab times WebGPU and the CPU', { timeout: 300_000 }, async () => {
  const gpuBrowser = await launch({ webgpu: true });
  try {
    // A small image: SwiftShader runs the kernels on the CPU, seconds per run.
    const rows = await labRows(gpuBrowser, '?name=chelsea.webp&w=256', 240_000);
    console.log('lab timings, WebGPU on SwiftShader (a CPU Vulkan, so no GPU speed):');
    for (const r of rows) console.log(`  ${r.join(' | ')}`);
    const gpu = rows.find((r) => r[0] === 'browser' && r[1] === 'webgpu');
    assert.ok(gpu && Number(gpu[5]) > 0, `WebGPU row: ${JSON.stringify(gpu)}`);
    assert.ok(rows.some((r) => r[0] === 'browser' && r[1] === 'cpu' && Number(r[5]) > 0), 'CPU row');
  } finally {
    await gpuBrowser.close();
  }
});

test('an image answers with ETag and Cache-Control, then 304 on If-None-Match, and the second fetch is a hit', async () => {
  const u = `${ORIGIN}/img/coffee.jpg?w=300&q=72`;
  const first = await fetch(u);
  assert.equal(first.status, 200);
  await first.arrayBuffer();
  const etag = first.headers.get('etag');
  assert.match(etag, /^"[0-9a-f]{32}"$/);
  assert.match(first.headers.get('cache-control'), /max-age=\d+/);
  // w=300 snaps to 320, q=72 to 70: the same key as the canonical spelling.
  const canonical = await fetch(`${ORIGIN}/img/coffee.jpg?sharpen=0&q=70&w=320&fmt=jpg&blur=0`);
  await canonical.arrayBuffer();
  assert.equal(canonical.headers.get('x-cache'), 'HIT');
  assert.equal(canonical.headers.get('etag'), etag);
  const again = await fetch(u, { headers: { 'If-None-Match': etag } });
  assert.equal(again.status, 304);
  assert.equal(again.headers.get('etag'), etag);
});
