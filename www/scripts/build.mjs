// Builds what workerd serves (into www/dist/, git-ignored):
//   dist/manifest.json      the allow-list of images: name, size, format, content hash
//   dist/worker/worker.js   the Worker bundle (esbuild), importing ...
//   dist/worker/fusegraph_wasm_bg.wasm   ... the fusegraph image build's wasm as a compiled-module import
//   dist/public/            the lab page's browser bundle and its copy of the wasm
// The fusegraph package comes from the repo (wasm/npm, built by
// `bash wasm/npm/scripts/build.sh`); copying its wasm here means a rebuild of
// the package never changes what a running workerd has loaded.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { probeHeader } from './probe-header.mjs';
import { IMAGE_NAME } from '../src/names.js';

const www = join(dirname(fileURLToPath(import.meta.url)), '..');
// FUSEGRAPH_PKG builds against another checkout of the package.
const pkg = process.env.FUSEGRAPH_PKG ?? join(www, '..', 'wasm', 'npm');
// The worker and the lab page import `fusegraph/image`: the package's image builds.
const wasm = join(pkg, 'dist', 'image', 'fusegraph_wasm_bg.wasm');
const dist = join(www, 'dist');

if (!existsSync(wasm)) {
  console.error(`${wasm} is missing: build the fusegraph package first (bash wasm/npm/scripts/build.sh)`);
  process.exit(1);
}

function manifest() {
  const images = [];
  for (const file of readdirSync(join(www, 'images')).sort()) {
    if (file.endsWith('.md')) continue;
    if (!IMAGE_NAME.test(file)) throw new Error(`images/${file}: names must match ${IMAGE_NAME}`);
    const bytes = readFileSync(join(www, 'images', file));
    const { width, height, format } = probeHeader(bytes);
    const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
    images.push({ name: file, width, height, format, bytes: bytes.length, hash });
  }
  return { images };
}

// dist/results/ (the tests' figures) survives a rebuild.
for (const d of ['worker', 'public']) rmSync(join(dist, d), { recursive: true, force: true });
mkdirSync(join(dist, 'public'), { recursive: true });
const m = manifest();
writeFileSync(join(dist, 'manifest.json'), JSON.stringify(m, null, 2));

const common = { bundle: true, format: 'esm', minify: true, legalComments: 'none', logLevel: 'warning' };
await build({
  ...common,
  entryPoints: [join(www, 'src', 'worker.js')],
  outdir: join(dist, 'worker'),
  platform: 'neutral',
  target: 'es2022',
  conditions: ['workerd', 'worker'],
  alias: { 'fusegraph/image': join(pkg, 'src', 'entry-workerd-image.js') },
  loader: { '.wasm': 'copy' },
  assetNames: '[name]',
  // Workers have no WebGPU, so the package never loads its WebGPU builds
  // there: their glue stays out of the bundle (dynamic imports never taken).
  external: ['*/dist/webgpu/fusegraph_wasm.js', '*/dist/image-webgpu/fusegraph_wasm.js'],
});
await build({
  ...common,
  entryPoints: [join(www, 'lab', 'lab.js')],
  outdir: join(dist, 'public'),
  platform: 'browser',
  target: 'es2022',
  alias: { 'fusegraph/image': join(pkg, 'src', 'entry-web-image.js') },
});
copyFileSync(wasm, join(dist, 'public', 'fusegraph_wasm_bg.wasm'));
// The package's WebGPU image build, for the lab page's WebGPU row (when built).
const gpuWasm = join(pkg, 'dist', 'image-webgpu', 'fusegraph_wasm_bg.wasm');
if (existsSync(gpuWasm)) copyFileSync(gpuWasm, join(dist, 'public', 'fusegraph_webgpu_bg.wasm'));

const size = (p) => statSync(p).size;
const sizes = {
  worker_js_bytes: size(join(dist, 'worker', 'worker.js')),
  worker_wasm_bytes: size(join(dist, 'worker', 'fusegraph_wasm_bg.wasm')),
  lab_js_bytes: size(join(dist, 'public', 'lab.js')),
  images_bytes: m.images.reduce((s, i) => s + i.bytes, 0),
};
writeFileSync(join(dist, 'sizes.json'), JSON.stringify(sizes, null, 2));
console.log(
  `built dist/: worker.js ${sizes.worker_js_bytes} B + wasm ${sizes.worker_wasm_bytes} B, ` +
    `lab.js ${sizes.lab_js_bytes} B, ${m.images.length} images (${sizes.images_bytes} B)`,
);
