// The size budget: the gzip-compressed .wasm of the core ops must stay at or
// under 350 KB (350,000 bytes). Prints the sizes; exits 1 over budget.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BUDGET_BYTES = 350_000;
const path = new URL('../dist/fusegraph_wasm_bg.wasm', import.meta.url);
const raw = readFileSync(path);
const gz = gzipSync(raw, { level: 9 }).length;
const kb = (n) => `${(n / 1000).toFixed(1)} KB`;
console.log(`fusegraph_wasm_bg.wasm: ${kb(raw.length)} raw, ${kb(gz)} gzip -9 (budget ${kb(BUDGET_BYTES)} gzip)`);
if (gz > BUDGET_BYTES) {
  console.error(`size budget exceeded by ${kb(gz - BUDGET_BYTES)}`);
  process.exit(1);
}
