// Deno (the binary of the `deno` npm package, a dev dependency): a consumer
// project imports 'fusegraph' from node_modules (Deno resolves the package's
// "node" export condition) and runs on the CPU path, and with 'auto' on
// Deno's own WebGPU when it gives an adapter (Mesa's lavapipe on a machine
// without a GPU), else on the CPU again.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { consumerProject } from './project.js';
import { checkConsumerResult } from './expect.js';

const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));

const MAIN = `import { init } from 'fusegraph';
import { compute } from './lib/runtimes/consumer.js';
try {
  const adapter = await globalThis.navigator?.gpu?.requestAdapter();
  console.log(JSON.stringify({ ...(await compute(init, { backend: Deno.args[0] })), hasAdapter: !!adapter }));
} catch (e) {
  console.log(JSON.stringify({ error: \`\${e.code}: \${e.message}\` }));
}
`;

async function runDeno(backend) {
  const project = await consumerProject('deno', { 'main.js': MAIN });
  try {
    const { stdout, stderr } = await promisify(execFile)(deno, ['run', '--quiet', '--no-prompt', '--allow-read', '--allow-env', 'main.js', backend], {
      cwd: project.dir,
      timeout: 120_000,
      env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    });
    const line = stdout.trim().split('\n').pop();
    assert.ok(line, `deno printed nothing; stderr:\n${stderr}`);
    return JSON.parse(line);
  } finally {
    await project.remove();
  }
}

test('Deno runs the package from node_modules on the CPU and matches the f64 reference', async () => {
  checkConsumerResult(await runDeno('cpu'), 'cpu');
});

test("Deno with 'auto' uses its WebGPU adapter when it has one, and matches the f64 reference", async (t) => {
  const r = await runDeno('auto');
  t.diagnostic(`Deno adapter: ${r.hasAdapter ? 'yes' : 'none'}; backend: ${r.backend}`);
  checkConsumerResult(r, r.hasAdapter ? 'webgpu' : 'cpu');
});
