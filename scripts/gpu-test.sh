#!/usr/bin/env bash
# Builds the CUDA test binaries and the CLI here (no CUDA toolkit needed:
# the libraries are loaded at run time), copies them into .gpu-bin/cuda/
# (git-ignored) with a runner, and prints the command that runs them on a
# machine with an NVIDIA GPU, from the repository root:
#
#   bash .gpu-bin/cuda/run.sh            # OUT=<folder for logs and JSON>, default .gpu-bin/out
#
# The runner: the CUDA and Auto conformance stamps, the Auto placement and
# fallback tests, the CUDA backend and copy-stream tests
# (FUSEGRAPH_REQUIRE_CUDA=1, so a GPU that does not open fails instead of
# skipping), the native unit tests, then `fusegraph bench --suite cuda`,
# bench/cuda_torch.py (PyTorch eager, torch.compile, CuPy) and the merge
# into cuda.json. `--no-bench` runs the tests only.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
dest=.gpu-bin/cuda
rm -rf "$dest" && mkdir -p "$dest"

executables() { # cargo args...: prints the test executables cargo built
  cargo "$@" --message-format=json |
    python3 -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])'
}

for exe in $(executables test --release --no-run -p fusegraph-tests --no-default-features --features cuda); do
  case "$(basename "$exe")" in
    conformance-*) cp "$exe" "$dest/conformance" ;;
    cuda_backend-*) cp "$exe" "$dest/cuda_backend" ;;
    auto_device-*) cp "$exe" "$dest/auto_device" ;;
    auto_device_loss-*) cp "$exe" "$dest/auto_device_loss" ;;
    cuda_copy_stream-*) cp "$exe" "$dest/cuda_copy_stream" ;;
  esac
done
for exe in $(executables test --release --no-run -p fusegraph --features cuda --lib); do
  cp "$exe" "$dest/native_unit"
done
cargo build --release -p fusegraph --features cuda --bin fusegraph
cp "$CARGO_TARGET_DIR/release/fusegraph" "$dest/fusegraph"

cat > "$dest/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the CUDA tests and benchmarks built by scripts/gpu-test.sh (from the repo root).
set -uo pipefail
bin=.gpu-bin/cuda
OUT="${OUT:-.gpu-bin/out}"; mkdir -p "$OUT"
# The toolkit's libraries, and those of pip's nvidia-* wheels when present.
extra=$(python3 - 2>/dev/null <<'PY'
import glob, os, site
dirs = set()
for s in site.getsitepackages():
    for p in glob.glob(os.path.join(s, "nvidia", "**", "lib"), recursive=True):
        dirs.add(p)
print(":".join(sorted(dirs)))
PY
)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${extra}:${LD_LIBRARY_PATH:-}"
export FUSEGRAPH_REQUIRE_CUDA=1 FUSEGRAPH_CACHE_DIR="${FUSEGRAPH_CACHE_DIR:-/tmp/fusegraph-cache}"
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
"$bin/conformance" cuda:: auto:: 2>&1 | tee "$OUT/conformance.log" | tail -n 40 || status=1
"$bin/auto_device" 2>&1 | tee "$OUT/auto_device.log" | tail -n 12 || status=1
"$bin/auto_device_loss" 2>&1 | tee -a "$OUT/auto_device.log" | tail -n 5 || status=1
"$bin/cuda_backend" 2>&1 | tee "$OUT/cuda_backend.log" | tail -n 20 || status=1
"$bin/cuda_copy_stream" 2>&1 | tee -a "$OUT/cuda_backend.log" | tail -n 8 || status=1
"$bin/native_unit" 2>&1 | tee "$OUT/native_unit.log" | tail -n 5 || status=1
if [ "${1:-}" != "--no-bench" ]; then
  "$bin/fusegraph" bench --suite cuda --out "$OUT/cuda_fusegraph.json" 2>&1 | tee "$OUT/bench.log" || status=1
  PYTHONUNBUFFERED=1 python3 bench/cuda_torch.py --out="$OUT/cuda_peers.json" 2>&1 | tee "$OUT/peers.log" || status=1
  python3 bench/merge_cuda.py "$OUT/cuda_fusegraph.json" "$OUT/cuda_peers.json" "$OUT/cuda.json" 2>&1 | tee "$OUT/merge.log" || status=1
fi
exit $status
RUN
chmod +x "$dest/run.sh"
du -sh "$dest"
echo "On the GPU machine, from the repository root (with .gpu-bin carried along):"
echo "  bash .gpu-bin/cuda/run.sh          # OUT=<dir> for logs and JSON; --no-bench for tests only"
