#!/usr/bin/env bash
# Re-check after the kernel-name fix: the PyTorch training loop must name 100%
# of its launches; then the per-API probe cost against its floor.
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-h100}}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
echo "=== PyTorch training loop, recorded"
$B/gpuobs record -o "$OUT/train2.gpuobs" -- python3 bench/h100/torch_train_step.py
python3 bench/h100/check_families.py "$OUT/train2.gpuobs"; echo "check exit $?"
echo "=== all families again"
$B/gpuobs record -o /tmp/fam.gpuobs -- $B/all_families --iterations 500 --truth /tmp/fam.json 2>/dev/null
python3 bench/h100/check_families.py /tmp/fam.gpuobs /tmp/fam.json | tail -14; echo "check exit $?"
echo "=== per-API cost on the fake library"
$B/gpuobs_bench api-loop --lib "$PWD/$B/libcuda.so.1" --calls 300000 --rounds 5
