#!/usr/bin/env bash
# Runs every fuzz target for a bounded time and prints, per target, the
# executions and crashes. Exits nonzero when any target crashed (the input
# is left in fuzz/artifacts/<target>/; turn it into a regression test in
# tests/tests/fuzz_regressions.rs, see SECURITY.md).
#
#   FUZZ_SECONDS    seconds per target (default 60)
#   FUZZ_TARGETS    targets to run (default: all, "graph image")
#   FUZZ_SANITIZER  none (default) or address
#
# cargo-fuzz wants a nightly compiler for its -Z flags; this runs on the
# stable toolchain with RUSTC_BOOTSTRAP=1. The default build has no
# sanitizer (the crate is safe Rust, and the build keeps debug assertions
# and overflow checks on, so the unsafe writes' bounds asserts run);
# FUZZ_SANITIZER=address adds ASan (its runtime ships with stable too,
# at about twice the build time and a third of the speed).
set -euo pipefail
cd "$(dirname "$0")"

CARGO_FUZZ_VERSION=0.13.2
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-"graph image"}
sanitizer=${FUZZ_SANITIZER:-none}
export RUSTC_BOOTSTRAP=1

if [[ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
  cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

# -a: debug assertions and overflow checks in every crate.
flags=(--sanitizer "$sanitizer" -a)
echo "+ cargo fuzz build ${flags[*]}"
start=$SECONDS
cargo fuzz build "${flags[@]}"
echo "build: $((SECONDS - start)) s"

failed=()
summary=()
for t in $targets; do
  mkdir -p "corpus/$t" "artifacts/$t"
  before=$(find "artifacts/$t" -type f | wc -l)
  log=$(mktemp)
  echo "+ cargo fuzz run $t (${seconds} s)"
  # The image target writes its seed corpus (tiny images, the small photos
  # of www/images) into its corpus directory at start-up.
  rc=0
  FUSEGRAPH_FUZZ_SEEDS="$PWD/corpus/image" \
    cargo fuzz run "${flags[@]}" "$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=$(($(find "artifacts/$t" -type f | wc -l) - before))
  if ((rc != 0)); then
    tail -n 60 "$log"
    failed+=("$t")
    crashes=$((crashes > 0 ? crashes : 1))
  fi
  summary+=("$t: ${execs:-?} executions in ${seconds} s, corpus $(find "corpus/$t" -type f | wc -l) inputs, crashes: $crashes")
  rm -f "$log"
done

printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "crashed: ${failed[*]} (inputs in fuzz/artifacts/)"
  exit 1
fi
