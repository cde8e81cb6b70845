#!/usr/bin/env bash
# The npm package outside Node, as scripts/test.sh runs it after ci.sh (which
# installs the dev dependencies and builds dist/): headless Chromium on
# WebGPU (SwiftShader) and on the CPU path, a Vite-built page in Chromium,
# Deno and workerd. Debian's chromium is installed when missing;
# playwright-core drives it and downloads no browser.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x "${FUSEGRAPH_CHROMIUM:-/usr/bin/chromium}" ]]; then
  apt-get update
  apt-get install -y --no-install-recommends chromium
fi
"${FUSEGRAPH_CHROMIUM:-/usr/bin/chromium}" --version 2>/dev/null || true
node --test --test-concurrency=1 test/browser/*.test.js test/runtimes/*.test.js
