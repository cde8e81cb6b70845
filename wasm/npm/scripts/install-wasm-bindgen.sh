#!/usr/bin/env bash
# Installs wasm-bindgen-cli at exactly the version of the wasm-bindgen crate
# in Cargo.lock, when it is missing or different (the generated JS glue and
# the crate must match). `--locked` first; when the registry cannot serve a
# dependency version pinned in the CLI's own lockfile, the same CLI version
# is installed with freshly resolved dependencies instead (said in the log).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
want=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/[^0-9.]/, ""); print; exit}' "$root/Cargo.lock")
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [[ "$have" == "$want" ]]; then
  echo "wasm-bindgen-cli $want present"
  exit 0
fi
echo "installing wasm-bindgen-cli $want (found: ${have:-none})"
if ! cargo install wasm-bindgen-cli --version "$want" --locked --force; then
  echo "wasm-bindgen-cli $want: --locked install failed; installing $want with resolved dependencies" >&2
  cargo install wasm-bindgen-cli --version "$want" --force
fi
