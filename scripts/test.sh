#!/usr/bin/env bash
# Every check the project has, in one pass: formatting, clippy, the test
# suites of the whole workspace, and the wasm32 build of the core and the
# wasm crate. Installs the toolchain pieces it needs. Runs every section
# even when an earlier one fails, then exits nonzero if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=()
section() { printf '\n===== %s =====\n' "$1"; }
run() {
  local name=$1
  shift
  section "$name"
  echo "+ $*"
  if "$@"; then
    echo "-- $name: ok"
  else
    echo "-- $name: FAILED"
    failed+=("$name")
  fi
}

section "toolchain"
if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust with rustup first" >&2
  exit 1
fi
if command -v rustup >/dev/null; then
  installed=$(rustup component list --installed)
  for c in rustfmt clippy; do
    grep -q "^$c" <<<"$installed" || rustup component add "$c"
  done
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
fi
# The wgpu tests run on Mesa's lavapipe (a Vulkan CPU driver) where no GPU is present.
if command -v dpkg >/dev/null && ! dpkg -s mesa-vulkan-drivers libvulkan1 >/dev/null 2>&1; then
  apt-get update
  apt-get install -y --no-install-recommends mesa-vulkan-drivers libvulkan1
fi
rustc --version
cargo --version

run "cargo fmt --check" cargo fmt --all -- --check
run "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
# A missing wgpu adapter is a failure here, not a skip.
run "cargo test" env FUSEGRAPH_REQUIRE_WGPU=1 cargo test --workspace --no-fail-fast
# cargo-fuzz targets (fuzz/, its own workspace) on the stable toolchain: random graphs against the reference, image decode + transforms.
run "fuzz targets (60 s each)" bash fuzz/run.sh
# Trains the CNN on the digits set on the CPU (seeded; ~1 min on 2 cores) and fails below 97% test accuracy.
run "digits training example" cargo run --release -p fusegraph --example digits -- --min-accuracy 0.97
# The image CLI end to end on a sample photo (the image ops' tests run in "cargo test").
run "fusegraph image CLI" bash -c 'out=$(mktemp -d) && cargo run --release -q -p fusegraph -- image www/images/coffee.jpg -w 200 --sharpen 0.5 -o "$out/coffee.webp" && test -s "$out/coffee.webp" && ! cargo run --release -q -p fusegraph -- image www/images/LICENSES.md -w 10 -o "$out/x.jpg"'
run "wasm32 build" cargo build -p fusegraph-core -p fusegraph-wasm --target wasm32-unknown-unknown --no-default-features
run "wasm32 clippy (WebGPU + image build)" cargo clippy -p fusegraph-wasm --target wasm32-unknown-unknown --features webgpu,image -- -D warnings
run "npm package: build + node tests" bash wasm/npm/scripts/ci.sh
run "npm package: wasm size budget" node wasm/npm/scripts/size.mjs
# Headless Chromium (WebGPU on SwiftShader + CPU), a Vite-built page, Deno, workerd.
run "npm package: browsers and runtimes" bash wasm/npm/scripts/ci-runtimes.sh
# The edge demo on workerd: e2e in headless Chromium, bad input, load test, Lighthouse.
run "edge demo (www)" bash www/scripts/ci.sh

section "summary"
if ((${#failed[@]})); then
  printf 'failed sections: %s\n' "${failed[*]}"
  exit 1
fi
echo "all sections passed"
