// A throwaway consumer project in a temp folder: package.json,
// node_modules/fusegraph linked to this package (as `npm install` of a local
// path would), and the shared test files the consumer imports.

import { mkdtemp, mkdir, symlink, copyFile, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TEST_DIR = fileURLToPath(new URL('..', import.meta.url));

/** Creates the project with `files` ({ name: text }); resolves to `{ dir, remove() }`. */
export async function consumerProject(prefix, files) {
  const dir = await mkdtemp(join(tmpdir(), `fusegraph-${prefix}-`));
  await mkdir(join(dir, 'node_modules'));
  await symlink(PACKAGE_ROOT, join(dir, 'node_modules', 'fusegraph'), 'dir');
  await mkdir(join(dir, 'lib', 'runtimes'), { recursive: true });
  await copyFile(join(TEST_DIR, 'data.js'), join(dir, 'lib', 'data.js'));
  await copyFile(join(TEST_DIR, 'runtimes', 'consumer.js'), join(dir, 'lib', 'runtimes', 'consumer.js'));
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: `${prefix}-consumer`, private: true, type: 'module' }));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
