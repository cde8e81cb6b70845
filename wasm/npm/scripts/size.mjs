// The size budget: the gzip-compressed .wasm of the core ops must stay at or
// under 350 KB (350,000 bytes), for each of the two builds: the CPU-only one
// (dist/) and the one with the WebGPU backend (dist/webgpu/). Prints the
// sizes; exits 1 when either is over budget.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BUDGET_BYTES = 350_000;
const BUILDS = { cpu: '../dist/fusegraph_wasm_bg.wasm', webgpu: '../dist/webgpu/fusegraph_wasm_bg.wasm' };
const kb = (n) => `${(n / 1000).toFixed(1)} KB`;
let over = false;
for (const [name, file] of Object.entries(BUILDS)) {
  const raw = readFileSync(new URL(file, import.meta.url));
  const gz = gzipSync(raw, { level: 9 }).length;
  console.log(`${name} build (${file.slice(3)}): ${kb(raw.length)} raw, ${kb(gz)} gzip -9 (budget ${kb(BUDGET_BYTES)} gzip)`);
  if (gz > BUDGET_BYTES) {
    console.error(`${name} build: size budget exceeded by ${kb(gz - BUDGET_BYTES)}`);
    over = true;
  }
}
if (over) process.exit(1);
