// workerd (the `workerd` npm package, a dev dependency): a Worker that
// imports 'fusegraph/workerd' answers one request with consumer.js's result
// (CPU path; Workers have no WebGPU). The package's files are given to
// workerd as modules under the names its relative imports resolve to, and
// the .wasm as a compiled wasm module (Workers cannot compile bytes at run
// time). The socket is on 127.0.0.1; the worker has no network.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { consumerProject, PACKAGE_ROOT } from './project.js';
import { checkConsumerResult } from './expect.js';

const workerd = fileURLToPath(new URL('../../node_modules/.bin/workerd', import.meta.url));

const WORKER = `import { init } from 'fusegraph/workerd';
import { compute } from 'lib/runtimes/consumer.js';
export default {
  async fetch() {
    try {
      return Response.json(await compute(init));
    } catch (e) {
      return Response.json({ error: \`\${e.code}: \${e.message}\` });
    }
  },
};
`;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The capnp config: `modules` is [name, kind, file] with paths relative to the project. */
function config(modules, port) {
  const list = modules.map(([name, kind, file]) => `    (name = "${name}", ${kind} = embed "${file}"),`).join('\n');
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .test), (name = "none", network = (allow = []))],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const test :Workerd.Worker = (
  compatibilityDate = "2025-09-01",
  modules = [
${list}
  ],
  globalOutbound = "none",
);
`;
}

async function copyInto(dir, from, to) {
  await mkdir(dirname(join(dir, to)), { recursive: true });
  await copyFile(join(PACKAGE_ROOT, from), join(dir, to));
}

test("workerd runs a Worker importing 'fusegraph/workerd' and matches the f64 reference", async () => {
  const port = await freePort();
  const project = await consumerProject('workerd', { 'worker.js': WORKER });
  // Module names follow the package layout: 'fusegraph/workerd' is the
  // entry, so './api.js' from it is 'fusegraph/api.js' and '../dist/...' is 'dist/...'.
  const modules = [['worker.js', 'esModule', 'worker.js']];
  await copyInto(project.dir, 'src/entry-workerd.js', 'pkg/fusegraph/workerd');
  modules.push(['fusegraph/workerd', 'esModule', 'pkg/fusegraph/workerd']);
  for (const f of await readdir(join(PACKAGE_ROOT, 'src'))) {
    if (!f.endsWith('.js') || f.startsWith('entry-')) continue;
    await copyInto(project.dir, `src/${f}`, `pkg/fusegraph/${f}`);
    modules.push([`fusegraph/${f}`, 'esModule', `pkg/fusegraph/${f}`]);
  }
  await copyInto(project.dir, 'dist/fusegraph_wasm.js', 'pkg/dist/fusegraph_wasm.js');
  await copyInto(project.dir, 'dist/fusegraph_wasm_bg.wasm', 'pkg/dist/fusegraph_wasm_bg.wasm');
  modules.push(['dist/fusegraph_wasm.js', 'esModule', 'pkg/dist/fusegraph_wasm.js']);
  modules.push(['dist/fusegraph_wasm_bg.wasm', 'wasm', 'pkg/dist/fusegraph_wasm_bg.wasm']);
  modules.push(['lib/data.js', 'esModule', 'lib/data.js']);
  modules.push(['lib/runtimes/consumer.js', 'esModule', 'lib/runtimes/consumer.js']);
  await writeFile(join(project.dir, 'config.capnp'), config(modules, port));

  const child = spawn(workerd, ['serve', 'config.capnp'], { cwd: project.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    let body;
    const deadline = Date.now() + 60_000;
    while (body === undefined) {
      if (child.exitCode !== null) assert.fail(`workerd exited with ${child.exitCode}:\n${log}`);
      try {
        body = await (await fetch(`http://127.0.0.1:${port}/`)).json();
      } catch (e) {
        if (Date.now() > deadline) assert.fail(`workerd did not answer within 60 s (${e.message}):\n${log}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    checkConsumerResult(body, 'cpu');
  } finally {
    child.kill('SIGTERM');
    await exited;
    await project.remove();
  }
});
