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
# The package's test script: every test file on the SIMD128 build, then
# (Node 20 has relaxed SIMD behind a flag; with it, init() loads
# dist/relaxed/) the files that exercise the loaded build, on that one.
npm test
