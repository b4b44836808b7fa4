#!/usr/bin/env bash
# Issue 5 on a GPU host: call stacks at scale and their cost.
#  1. one capture of the 4-stream CUDA program and a PyTorch loop running
#     together, over 1,000,000 GPU calls: every one with a stack? drops?
#     deduplication, depth median/p99;
#  2. the PyTorch training loop: how deep frame-pointer stacks get through
#     libtorch (do they reach the Python interpreter?);
#  3. cost per op with and without stacks against the empty-probe floor.
# usage: bench/h100/run_stacks.sh [OUT]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-h100}}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
echo "=== 1M GPU calls: cuda_streams 400,000 launches on 4 streams + PyTorch 640,000 ops, together"
t0=$(date +%s%N)
$B/gpuobs record -o /tmp/million.gpuobs --ring-mb 64 -- sh -c \
  "$B/cuda_streams --launches 400000 --streams 4 & python3 bench/h100/torch_tiny_ops.py --iters 640000; wait"
echo "record wall $(( ($(date +%s%N) - t0) / 1000000 )) ms, capture $(du -h /tmp/million.gpuobs | cut -f1)"
python3 bench/h100/stack_stats.py /tmp/million.gpuobs
$B/gpuobs stacks /tmp/million.gpuobs --top 3
rm -f /tmp/million.gpuobs
echo "=== PyTorch training loop"
$B/gpuobs record -o "$OUT/stacks-train.gpuobs" -- python3 bench/h100/torch_train_step.py
python3 bench/h100/stack_stats.py "$OUT/stacks-train.gpuobs"
$B/gpuobs stacks "$OUT/stacks-train.gpuobs" --top 2
$B/gpuobs export folded "$OUT/stacks-train.gpuobs" -o "$OUT/stacks-train.folded"
echo "=== first instructions of the probed libcuda entry points (which stack path applies)"
python3 - <<'PY'
import ctypes
lib = ctypes.CDLL("libcuda.so.1")
for name in ("cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch", "cuStreamSynchronize", "cuMemAlloc_v2"):
    addr = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    print(f"  {name:22s} {bytes((ctypes.c_ubyte * 4).from_address(addr)).hex()}")
PY
echo "=== cost per op: no probe, empty probe, gpuobs with and without stacks"
bash bench/h100/torch_overhead.sh 200000 3 | tail -7
