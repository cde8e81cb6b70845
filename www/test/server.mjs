// Starts workerd on the built demo (dist/ must exist: node scripts/build.mjs)
// and resolves once it answers; stop() ends that process only.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const www = join(dirname(fileURLToPath(import.meta.url)), '..');
// FG_WWW_PORT moves the server off config.capnp's 8787 (to run two tests at once).
export const PORT = Number(process.env.FG_WWW_PORT ?? 8787);
export const ORIGIN = `http://127.0.0.1:${PORT}`;

export async function startServer({ log = false, args = [] } = {}) {
  const bin = join(www, 'node_modules', '.bin', 'workerd');
  const child = spawn(bin, ['serve', 'config.capnp', '--experimental', `--socket-addr=http=127.0.0.1:${PORT}`, ...args], { cwd: www, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = [];
  const keep = (d) => {
    output.push(String(d));
    if (output.length > 200) output.shift();
    if (log) process.stderr.write(d);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
  });
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (exited) throw new Error(`workerd exited (${JSON.stringify(exited)}):\n${output.join('')}`);
    try {
      const r = await fetch(`${ORIGIN}/favicon.svg`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error(`workerd did not answer within 20 s:\n${output.join('')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid: child.pid,
    output,
    get exited() {
      return exited;
    },
    /** Resident memory of the workerd process in bytes (from /proc). */
    rss() {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : null;
    },
    async stop() {
      if (exited) return;
      const done = new Promise((r) => child.on('exit', r));
      child.kill('SIGTERM');
      await done;
    },
  };
}

export async function stats() {
  return (await fetch(`${ORIGIN}/__stats`)).json();
}
