#!/usr/bin/env bash
# Builds the package's generated half into dist/ (git-ignored), five times:
# dist/ is the CPU-only build (SIMD128), dist/webgpu/ the same with the
# crate's `webgpu` feature (the core's wgpu backend on the browser's
# WebGPU), so the CPU path does not carry wgpu; dist/image/ and
# dist/image-webgpu/ are those two with the `image` feature (codecs and
# image ops), so the core-ops builds do not carry the codecs; dist/relaxed/
# is the CPU-only build whose matmul microkernels (the vendored gemm-f32)
# and softmax exponential (core's softmax_simd128.rs), under
# `--cfg fusegraph_relaxed_madd`, use f32x4.relaxed_madd, which init()
# loads where the runtime validates relaxed SIMD. Only those kernels ask for
# relaxed SIMD, but LLVM's wasm backend gives every function the module's
# union of target features, so it may lower any clamp or pmax to relaxed
# min/max (whose NaN result is the engine's): the core restores NaN where
# that mattered (fastmath::keep_nan, softmax_simd128's exponential), and
# test/relaxed.test.js checks NaN through every op in both builds. For each:
#   1. the fusegraph-wasm crate for wasm32 with the `wasm-release` profile,
#   2. wasm-bindgen (the CLI pinned to the crate's version in Cargo.lock)
#      with `--target web`, whose init takes a URL, bytes or a compiled
#      Module, so one output serves browsers, Node, Deno and workerd,
#   3. wasm-opt from the `binaryen` dev dependency (level: FG_WASM_OPT,
#      default -O3; "none" skips it).
# Run `npm ci` first. Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(cd ../.. && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
profile=wasm-release
opt_level=${FG_WASM_OPT:--O3}

want=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/[^0-9.]/, ""); print; exit}' "$root/Cargo.lock")
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [[ "$have" != "$want" ]]; then
  echo "wasm-bindgen-cli $want is needed (found: ${have:-none}); run scripts/install-wasm-bindgen.sh" >&2
  exit 1
fi

# build_variant OUT_DIR [CARGO_FEATURES [relaxed]]
build_variant() {
  local out=$1 features=${2:-} relaxed=${3:-}
  local dir=$target_dir relaxed_env=() relaxed_opt=()
  if [[ -n "$relaxed" ]]; then
    # Its own target folder: other rustflags would otherwise rebuild the
    # SIMD128 builds' artifacts on every run. The variable replaces
    # .cargo/config.toml's wasm32 rustflags, so it names +simd128 as well.
    dir=$target_dir/relaxed-simd
    relaxed_env=("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS=-C target-feature=+simd128 --cfg fusegraph_relaxed_madd")
    relaxed_opt=(--enable-relaxed-simd)
  fi
  (cd "$root" && env CARGO_TARGET_DIR="$dir" "${relaxed_env[@]}" \
    cargo build -p fusegraph-wasm --target wasm32-unknown-unknown --profile "$profile" ${features:+--features "$features"})
  local raw="$dir/wasm32-unknown-unknown/$profile/fusegraph_wasm.wasm"
  wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name fusegraph_wasm "$raw"
  if [[ "$opt_level" != none ]]; then
    # The features rustc enables for wasm32 (SIMD128 from .cargo/config.toml;
    # relaxed SIMD for dist/relaxed/).
    node_modules/.bin/wasm-opt "$opt_level" "${relaxed_opt[@]}" \
      --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int \
      --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
      --strip-debug --strip-producers \
      "$out/fusegraph_wasm_bg.wasm" -o "$out/fusegraph_wasm_bg.wasm"
  fi
  echo "built $out/ ($(wc -c <"$out/fusegraph_wasm_bg.wasm") bytes of wasm, wasm-opt $opt_level)"
}

rm -rf dist
build_variant dist
build_variant dist/webgpu webgpu
build_variant dist/image image
build_variant dist/image-webgpu image,webgpu
build_variant dist/relaxed "" relaxed
