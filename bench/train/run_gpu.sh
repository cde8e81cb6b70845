#!/usr/bin/env bash
# Training on a CUDA machine: the autograd conformance stamp, the digits CNN
# on the GPU (fails below 97% test accuracy), the training-step benchmark
# (bench/results/train.json) and its PyTorch companion
# (bench/results/train_torch.json), side by side on the same GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo test --release -p fusegraph-tests --no-default-features --features cuda --test conformance cuda::autograd
cargo run --release -p fusegraph --features cuda --example digits -- --cuda --min-accuracy 0.97
cargo run --release -p fusegraph --features cuda --example train_bench -- --cuda --out bench/results/train.json
python3 bench/train/train_torch.py
