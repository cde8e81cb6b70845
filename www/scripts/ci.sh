#!/usr/bin/env bash
# The edge demo's checks (a section of scripts/test.sh): installs Chromium
# (Debian's package) when missing, `npm ci`, builds the Worker, then unit,
# end-to-end (Playwright, headless Chromium), bad-input, worker leak (10,000
# requests, ~7 s), load (autocannon, 30 s) and Lighthouse tests. Prints every figure; writes them with the
# machine's details to www/dist/results/edge.json. Runs every step, then
# exits nonzero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(cd .. && pwd)

# The Worker's image endpoint is fusegraph's image API (wasm/npm/src/image.js);
# a package without it cannot serve a single image, so there is nothing to test.
if [[ ! -f $root/wasm/npm/src/image.js ]]; then
  echo "www: SKIPPED: the fusegraph package has no image API (wasm/npm/src/image.js) yet"
  exit 0
fi

if [[ ! -x ${CHROMIUM:-/usr/bin/chromium} ]]; then
  apt-get update && apt-get install -y --no-install-recommends chromium || exit 1
fi
npm ci --no-audit --no-fund || exit 1
if [[ ! -f $root/wasm/npm/dist/fusegraph_wasm_bg.wasm ]]; then
  (cd "$root/wasm/npm" && bash scripts/install-wasm-bindgen.sh && npm ci --no-audit --no-fund && bash scripts/build.sh) || exit 1
fi
node scripts/build.mjs || exit 1
mkdir -p dist/results

failed=()
step() {
  local name=$1
  shift
  echo "--- www: $name"
  "$@" || failed+=("$name")
}
step "unit, end-to-end and bad-input tests" node --test --test-concurrency=1 test/unit.test.mjs test/e2e.test.mjs test/bad-input.test.mjs
step "worker leak check" node test/leak.mjs --out dist/results/leak.json
step "load test" node test/load.mjs --out dist/results/load.json
step "lighthouse" node test/lighthouse.mjs --out dist/results/lighthouse.json
step "report" node scripts/report.mjs
if ((${#failed[@]})); then
  echo "www: failed: ${failed[*]}"
  exit 1
fi
