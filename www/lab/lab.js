// The lab page's script: fetches an original photo, runs fusegraph's
// fg.image.transform on it in the browser, on the wasm CPU backend and on
// WebGPU where the browser has it, and fetches the same transform from the
// worker; it shows each one's timings. Bundled by scripts/build.mjs.
import { init } from 'fusegraph/image';

// The package's two image builds (CPU, and CPU + WebGPU), served by the worker.
const WASM = { wasmImage: '/assets/fusegraph_wasm_bg.wasm', wasmImageWebGpu: '/assets/fusegraph_webgpu_bg.wasm' };
const REPS = 5;
// Fewer on WebGPU: without a GPU the adapter is a CPU emulation (SwiftShader), seconds a run.
const GPU_REPS = 3;
const $ = (id) => document.getElementById(id);

function params() {
  const f = new FormData($('params'));
  return {
    name: String(f.get('name')),
    w: Number(f.get('w')),
    q: Number(f.get('q')),
    fmt: String(f.get('fmt')),
    blur: Number(f.get('blur')),
    sharpen: Number(f.get('sharpen')),
  };
}

const ms = (v) => (Number.isFinite(v) ? v.toFixed(1) : '—');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function row(cells) {
  const tr = document.createElement('tr');
  for (const c of cells) {
    const td = document.createElement('td');
    td.textContent = c;
    tr.append(td);
  }
  $('timings').tBodies[0].append(tr);
}

/** Times `fg.image.transform` (median of REPS after one warm-up) and adds its row. */
async function timeTransform(fg, bytes, p) {
  const opts = { width: p.w, quality: p.q, format: p.fmt, blur: p.blur || undefined, sharpen: p.sharpen || undefined };
  await fg.image.transform(bytes, opts); // warm-up: compiles kernels, grows memory
  const runs = [];
  for (let i = 0; i < REPS; i += 1) {
    const t0 = performance.now();
    const r = await fg.image.transform(bytes, opts);
    runs.push({ total: performance.now() - t0, r });
  }
  const mid = runs.find((x) => x.total === median(runs.map((y) => y.total)));
  const t = mid.r.timings ?? {};
  row(['browser', fg.backend, ms(t.decode), ms(t.process), ms(t.encode), ms(mid.total), `${mid.r.width}x${mid.r.height} ${mid.r.format}, ${mid.r.bytes.byteLength} B`]);
  return mid.r;
}

/**
 * The pipeline op by op on the WebGPU backend: decode (into a device
 * tensor), resize/blur/sharpen (lazy, run on the GPU when read back), then
 * encode. `transform` is the CPU's one-call path, so WebGPU gets this chain.
 */
async function timeWebGpu(fg, bytes, p) {
  const once = async () => {
    const t0 = performance.now();
    const img = fg.image.decode(bytes);
    const t1 = performance.now();
    let x = fg.image.resize(img, { width: p.w });
    if (p.blur) x = fg.image.blur(x, p.blur);
    if (p.sharpen) x = fg.image.sharpen(x, p.sharpen);
    const pixels = await x.toArray(); // runs the kernels and reads back
    const t2 = performance.now();
    const shape = x.shape;
    img.dispose();
    x.dispose();
    // The encoders read their input synchronously, which a browser GPU
    // cannot do: encode the read-back pixels as a CPU tensor.
    const cpu = await init({ backend: 'cpu', ...WASM });
    const t3a = performance.now();
    const host = cpu.tensor(pixels, shape, { dtype: 'u8' });
    const out = cpu.image.encode(host, { format: p.fmt, quality: p.q });
    const t3 = performance.now();
    host.dispose();
    await init({ backend: 'webgpu', ...WASM });
    return { total: t2 - t0 + (t3 - t3a), decode: t1 - t0, process: t2 - t1, encode: t3 - t3a, r: { bytes: out, width: shape[1], height: shape[0], format: p.fmt } };
  };
  await once(); // warm-up: compiles pipelines
  const runs = [];
  for (let i = 0; i < GPU_REPS; i += 1) runs.push(await once());
  const mid = runs.find((x) => x.total === median(runs.map((y) => y.total)));
  row(['browser', 'webgpu', ms(mid.decode), ms(mid.process), ms(mid.encode), ms(mid.total), `${mid.r.width}x${mid.r.height} ${mid.r.format}, ${mid.r.bytes.byteLength} B`]);
  return mid.r;
}

/**
 * The first init() picks the build: 'auto' loads the WebGPU one when the
 * browser gives an adapter (it has the CPU path too), so WebGPU runs first
 * and the CPU second on the same build; without an adapter the row says why.
 */
async function inBrowser(bytes, p) {
  let last = null;
  const auto = await init({ backend: 'auto', ...WASM });
  if (auto.backend === 'webgpu') {
    try {
      last = await timeWebGpu(auto, bytes, p);
    } catch (e) {
      row(['browser', 'webgpu', '—', '—', '—', '—', `failed: ${e.code ?? ''} ${e.message}`]);
    }
  } else row(['browser', 'webgpu', '—', '—', '—', '—', `not used: ${auto.fallback ?? 'no adapter'}`]);
  const cpu = await init({ backend: 'cpu', ...WASM });
  return (await timeTransform(cpu, bytes, p)) ?? last;
}

async function onServer(p) {
  const q = new URLSearchParams({ w: p.w, q: p.q, fmt: p.fmt, blur: p.blur, sharpen: p.sharpen });
  const t0 = performance.now();
  const r = await fetch(`/img/${encodeURIComponent(p.name)}?${q}`);
  const body = await r.arrayBuffer();
  const total = performance.now() - t0;
  if (!r.ok) {
    row(['worker', '—', '—', '—', '—', ms(total), `${r.status}: ${new TextDecoder().decode(body).trim()}`]);
    return;
  }
  row(['worker (round trip)', 'wasm cpu', '—', '—', '—', ms(total), `${r.headers.get('X-Image-Size')}, ${body.byteLength} B, X-Cache: ${r.headers.get('X-Cache')}`]);
}

async function run() {
  const p = params();
  $('timings').tBodies[0].replaceChildren();
  $('status').textContent = `running ${p.name}…`;
  try {
    const src = await fetch(`/src/${encodeURIComponent(p.name)}`);
    if (!src.ok) throw new Error(`fetching the original answered ${src.status}`);
    const bytes = new Uint8Array(await src.arrayBuffer());
    const last = await inBrowser(bytes, p);
    await onServer(p);
    if (last) {
      const url = URL.createObjectURL(new Blob([last.bytes], { type: `image/${last.format}` }));
      const img = $('preview');
      img.width = last.width;
      img.height = last.height;
      img.src = url;
    }
    $('status').textContent = `done: ${p.name}, median of ${REPS} runs in the browser (${GPU_REPS} on WebGPU)`;
  } catch (e) {
    $('status').textContent = `failed: ${e.message}`;
  }
  $('status').dataset.done = '1';
}

// /lab?name=&w=&q=&fmt=&blur=&sharpen= fills the form (nothing else is read).
for (const [k, v] of new URLSearchParams(location.search)) {
  const field = $('params').elements.namedItem(k);
  if (field && ['name', 'w', 'q', 'fmt', 'blur', 'sharpen'].includes(k)) field.value = v;
}

$('params').addEventListener('submit', (e) => {
  e.preventDefault();
  run();
});
run();
