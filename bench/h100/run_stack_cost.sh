#!/usr/bin/env bash
# What a call stack costs per event on a GPU host: the launch and API
# microbenchmarks (fake driver library: a fixed, shallow stack) and the
# PyTorch tiny-op loop (real stacks through libtorch), each with stacks,
# without stacks (--stack-depth 0) and against the empty-probe floor.
# usage: bench/h100/run_stack_cost.sh   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
echo "=== launch loop (fake libcuda)"
$B/gpuobs_bench launch-loop --lib "$PWD/$B/libcuda.so.1" --calls 300000 --rounds 5 | tail -3
echo "=== api loop (fake libcuda)"
$B/gpuobs_bench api-loop --lib "$PWD/$B/libcuda.so.1" --calls 300000 --rounds 3
echo "=== PyTorch tiny ops"
bash bench/h100/torch_overhead.sh 200000 5 | tail -7
echo "=== PyTorch stack after the change (cut at the first non-code address)"
$B/gpuobs record -o /tmp/t.gpuobs -- python3 bench/h100/torch_tiny_ops.py --iters 2000 >/dev/null 2>&1
$B/gpuobs stacks /tmp/t.gpuobs --top 1
