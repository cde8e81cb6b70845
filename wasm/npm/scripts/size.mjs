// The size budget: the gzip-compressed .wasm of the core ops must stay at or
// under 350 KB (350,000 bytes), for each of the three core-ops builds: the
// CPU-only one (dist/), the same with relaxed SIMD (dist/relaxed/) and the
// one with the WebGPU backend (dist/webgpu/).
// The image builds (dist/image/ and dist/image-webgpu/: the CPU and WebGPU
// builds plus the JPEG/PNG/WebP codecs and image ops) are checked on what
// the image feature adds to its core build, at most 262 and 258 KB gzip, so
// a codec that grows shows up here. Their core part is the same code as the
// core builds', which the 350 KB budget governs. (They had absolute
// ceilings, 492 and 602 KB, until a core change that made the image-WebGPU
// build's code smaller grew its gzip by 0.3 KB, 0.2 KB past 602: the gzip
// of a 1.8 MB module moves by a few hundred bytes with any change in it.)
// Prints the sizes; exits 1 when any is over its budget.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const CORE_BUDGET_BYTES = 350_000;
// name: [file, budget in gzip bytes, the core build it is measured over (if any)]
const BUILDS = {
  cpu: ['../dist/fusegraph_wasm_bg.wasm', CORE_BUDGET_BYTES],
  relaxed: ['../dist/relaxed/fusegraph_wasm_bg.wasm', CORE_BUDGET_BYTES],
  webgpu: ['../dist/webgpu/fusegraph_wasm_bg.wasm', CORE_BUDGET_BYTES],
  image: ['../dist/image/fusegraph_wasm_bg.wasm', 262_000, 'cpu'],
  'image-webgpu': ['../dist/image-webgpu/fusegraph_wasm_bg.wasm', 258_000, 'webgpu'],
};
const kb = (n) => `${(n / 1000).toFixed(1)} KB`;
const gzipped = {};
let over = false;
for (const [name, [file, budget, base]] of Object.entries(BUILDS)) {
  const raw = readFileSync(new URL(file, import.meta.url));
  const gz = gzipSync(raw, { level: 9 }).length;
  gzipped[name] = gz;
  const counted = base ? gz - gzipped[base] : gz;
  const what = base ? `, ${kb(counted)} over the ${base} build (budget ${kb(budget)})` : ` (budget ${kb(budget)} gzip)`;
  console.log(`${name} build (${file.slice(3)}): ${kb(raw.length)} raw, ${kb(gz)} gzip -9${what}`);
  if (counted > budget) {
    console.error(`${name} build: size budget exceeded by ${kb(counted - budget)}`);
    over = true;
  }
}
if (over) process.exit(1);
