#!/usr/bin/env bash
# The whole wgpu device run, in one command on a machine with an NVIDIA GPU
# and no Rust toolchain: the Vulkan loader from .gl/ (Debian packages,
# unpacked), fusegraph's release binary and the conformance test binary from
# .gpu-bin/wgpu/ (built beforehand with `bench/run_wgpu_gpu.sh --build`), the
# conformance suite's wgpu stamp on the real GPU, `fusegraph bench --suite
# wgpu`, then PyTorch on the same cases (bench/wgpu_torch.py), merged into
# $OUT/wgpu.json. Logs go to $OUT too.
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--build" ]]; then
  # Here, with the toolchain: the binaries the device run needs.
  set -e
  cargo build --release -p fusegraph --features wgpu
  cargo test --release -p fusegraph-tests --no-default-features --features wgpu --test conformance --test wgpu_backend --no-run
  mkdir -p .gpu-bin/wgpu
  target=${CARGO_TARGET_DIR:-target}
  cp "$target/release/fusegraph" .gpu-bin/wgpu/fusegraph
  for t in conformance wgpu_backend; do
    bin=$(ls -t "$target"/release/deps/$t-* | grep -v '\.d$' | head -1)
    cp "$bin" .gpu-bin/wgpu/$t
  done
  strip .gpu-bin/wgpu/* || true
  ls -la .gpu-bin/wgpu
  exit 0
fi

OUT=${OUT:-bench/results/gpu-run}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export WGPU_BACKEND=vulkan
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
status=0
echo "== conformance (wgpu stamp) and backend tests on the GPU =="
FUSEGRAPH_REQUIRE_WGPU=1 timeout 90 .gpu-bin/wgpu/conformance wgpu:: 2>&1 | tail -40 | tee "$OUT/conformance.log" || status=1
FUSEGRAPH_REQUIRE_WGPU=1 timeout 40 .gpu-bin/wgpu/wgpu_backend --nocapture 2>&1 | tail -30 | tee "$OUT/wgpu_backend.log" || status=1
echo "== fusegraph bench --suite wgpu =="
timeout 90 .gpu-bin/wgpu/fusegraph bench --suite wgpu --out "$OUT/wgpu_fusegraph.json" 2>&1 | tee "$OUT/bench.log" || status=1
echo "== PyTorch on the same cases =="
PYTHONUNBUFFERED=1 timeout 60 python3 bench/wgpu_torch.py --fusegraph "$OUT/wgpu_fusegraph.json" --out "$OUT/wgpu.json" 2>&1 | tee "$OUT/torch.log" || status=1
exit $status
