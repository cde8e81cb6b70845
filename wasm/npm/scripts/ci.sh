#!/usr/bin/env bash
# The npm package's checks, as scripts/test.sh runs them: the pinned
# wasm-bindgen-cli, the dev dependencies, the build, then the node tests.
# (The size budget is its own section: scripts/size.mjs.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-wasm-bindgen.sh
npm ci --no-audit --no-fund
bash scripts/build.sh
node --test test/*.test.js
