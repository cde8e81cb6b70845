#!/usr/bin/env bash
# Runs the CPU suite in fusegraph and in NumPy, one after the other in one
# run, and merges both into bench/results/cpu.json (+ cpu.svg, cpu.md).
# Usage: bench/run_cpu.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
if [[ "${1:-}" == "--quick" ]]; then
  quick=(--quick)
fi

echo "== NumPy environment (bench/.venv) =="
if [[ ! -x bench/.venv/bin/python ]]; then
  python3 -m venv bench/.venv
fi
bench/.venv/bin/python -m pip install --quiet numpy threadpoolctl

echo "== build fusegraph (release) =="
cargo build --release -p fusegraph

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
mkdir -p bench/results

echo "== fusegraph bench --suite cpu =="
cargo run --release -q -p fusegraph -- bench --suite cpu --out "$raw/fusegraph.json" "${quick[@]}"

echo "== NumPy =="
# NumPy picks its own BLAS kernel for this CPU; threadpoolctl records which.
(
  unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
  bench/.venv/bin/python bench/cpu_numpy.py --out "$raw/numpy.json" "${quick[@]}"
)

echo "== merge =="
bench/.venv/bin/python bench/merge_cpu.py "$raw/fusegraph.json" "$raw/numpy.json" \
  --out bench/results/cpu.json --svg bench/results/cpu.svg --table bench/results/cpu.md
echo "wrote bench/results/cpu.json, cpu.svg and cpu.md"
