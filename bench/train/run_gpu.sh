#!/usr/bin/env bash
# Training on a CUDA machine, fusegraph and PyTorch side by side on one GPU.
# The GPU machine needs no Rust toolchain: build here, run there.
#
#   bash bench/train/run_gpu.sh build     # here: release binaries into .gpu-bin/train/ (git-ignored)
#   OUT=/tmp/out bash bench/train/run_gpu.sh run   # there, from the repo root, .gpu-bin/train carried along
#
# `run`: the captured-training-step test (FUSEGRAPH_REQUIRE_CUDA=1, so a GPU
# that does not open fails instead of skipping), the digits CNN on the GPU
# (fails below 97% test accuracy), train_bench (MLP and ResNet-18: f32,
# bf16 autocast, bf16 autocast + CUDA graph), train_torch.py (eager and
# torch.compile) and merge.py into $OUT/train.json (copy it to
# bench/results/train.json). `run --skip-torch-resnet` leaves out the
# minutes-long ResNet-18 torch.compile.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=.gpu-bin/train

build() {
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
  rm -rf "$bin" && mkdir -p "$bin"
  cargo build --release -p fusegraph --features cuda --example train_bench --example digits
  cp "$CARGO_TARGET_DIR/release/examples/train_bench" "$CARGO_TARGET_DIR/release/examples/digits" "$bin/"
  cargo test --release --no-run -p fusegraph-tests --no-default-features --features cuda \
    --test cuda_train_graph --message-format=json |
    python3 -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])' | while read -r exe; do cp "$exe" "$bin/cuda_train_graph"; done
  du -sh "$bin"
}

run() {
  OUT="${OUT:-$bin/out}"; mkdir -p "$OUT"
  # The toolkit's libraries, and those of pip's nvidia-* wheels when present.
  local extra
  extra=$(python3 -c 'import glob, os, site
print(":".join(sorted({p for s in site.getsitepackages() for p in glob.glob(os.path.join(s, "nvidia", "**", "lib"), recursive=True)})))' 2>/dev/null || true)
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${extra}:${LD_LIBRARY_PATH:-}"
  export FUSEGRAPH_REQUIRE_CUDA=1 FUSEGRAPH_CACHE_DIR="${FUSEGRAPH_CACHE_DIR:-/tmp/fusegraph-cache}"
  local status=0 torch_args=()
  [ "${1:-}" = "--skip-torch-resnet" ] && torch_args=(--skip-resnet)
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
  "$bin/cuda_train_graph" --nocapture 2>&1 | tee "$OUT/test.log" | tail -n 12 || status=1
  "$bin/digits" --cuda --min-accuracy 0.97 2>&1 | tee "$OUT/digits.log" | tail -n 3 || status=1
  # Repetitions sized for one 10-minute device call with torch.compile's
  # minutes; REPS and RESNET_REPS override them for a shorter call.
  local reps="${REPS:-50}" resnet_reps="${RESNET_REPS:-20}"
  "$bin/train_bench" --cuda --reps "$reps" --resnet-reps "$resnet_reps" --out "$OUT/train_fusegraph.json" 2>&1 | tee "$OUT/bench.log" || status=1
  PYTHONUNBUFFERED=1 python3 bench/train/train_torch.py --out "$OUT/train_torch.json" --resnet-reps "$resnet_reps" "${torch_args[@]}" 2>&1 |
    tee "$OUT/torch.log" | grep -v Warning || status=1
  python3 bench/train/merge.py "$OUT/train_fusegraph.json" "$OUT/train_torch.json" "$OUT/gpu.txt" "$OUT/train.json" || status=1
  return $status
}

case "${1:-}" in
  build) build ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 build | run [--skip-torch-resnet]" >&2; exit 2 ;;
esac
