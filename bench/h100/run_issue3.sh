#!/usr/bin/env bash
# Full CUDA driver API capture on a GPU host (from .device-build/, see
# scripts/stage-device.sh): every family made vs recorded, a PyTorch training
# loop (families, kernel-name coverage), and the overhead benchmarks.
# usage: bench/h100/run_issue3.sh [OUTDIR]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-h100}}
mkdir -p "$OUT"
say() { printf '\n=== %s\n' "$*"; }
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing

say "1. all families, driver API, 4 streams, 500 iterations: made vs recorded"
$B/gpuobs -v info record -o "$OUT/families.gpuobs" -- $B/all_families --iterations 500 --truth "$OUT/families.json"
python3 bench/h100/check_families.py "$OUT/families.gpuobs" "$OUT/families.json"; echo "check exit $?"

say "2. PyTorch training loop (MLP, AdamW, 20 steps), recorded"
$B/gpuobs record -o "$OUT/train.gpuobs" -- python3 bench/h100/torch_train_step.py
python3 bench/h100/check_families.py "$OUT/train.gpuobs"; echo "check exit $?"

say "3. the 4-stream example, 20000 launches"
$B/gpuobs record -o /tmp/streams.gpuobs -- $B/cuda_streams --launches 20000 --streams 4
$B/gpuobs report launches /tmp/streams.gpuobs

say "4. launch loop on the fake library: none / empty uprobe / gpuobs"
$B/gpuobs_bench launch-loop --lib "$PWD/$B/libcuda.so.1" --calls 500000 --rounds 5

say "5. PyTorch tiny ops: none / floor / gpuobs"
bash bench/h100/torch_overhead.sh 200000 5
