#!/usr/bin/env bash
# The npm package's checks, as scripts/test.sh runs them: the pinned
# wasm-bindgen-cli, the dev dependencies, the build, then the node tests
# (twice: the SIMD128 build, then the relaxed-SIMD one).
# (The size budget is its own section: scripts/size.mjs.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-wasm-bindgen.sh
npm ci --no-audit --no-fund
bash scripts/build.sh
node --test test/*.test.js
# Node 20 has relaxed SIMD behind a flag; with it, init() loads the
# relaxed-SIMD build (dist/relaxed/), and these files run on that build.
node --experimental-wasm-relaxed-simd --test test/ops.test.js test/relaxed.test.js test/errors.test.js \
  test/memory.test.js test/panic.test.js test/image-build.test.js
