#!/usr/bin/env bash
# --unwind bpf on a GPU host: table sizes and build time for PyTorch's
# libraries, depth and Python reach, the million-call capture, and the cost
# per call against fp, dwarf (user space) and no stacks.
# usage: bench/h100/run_bpf_unwind.sh   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
q() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT group_concat(name || '=' || value, ' ') FROM counters WHERE name LIKE 'unwind%' OR name LIKE 'bpf_unw%' OR name LIKE 'dropped%' OR name LIKE 'stack_walks%'\").fetchone()[0])" "$1"; }
echo "=== PyTorch tiny ops, 300,000 ops, --unwind bpf"
t0=$(date +%s%N)
$B/gpuobs record -o /tmp/bpf.gpuobs --unwind bpf -- python3 bench/h100/torch_tiny_ops.py --iters 300000 2>&1 | tail -1
echo "record wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
q /tmp/bpf.gpuobs
python3 bench/h100/stack_stats.py /tmp/bpf.gpuobs | grep -vE "rows,"
echo "=== 1M GPU calls with --unwind bpf"
t0=$(date +%s%N)
$B/gpuobs record -o /tmp/m.gpuobs --unwind bpf --ring-mb 64 -- sh -c \
  "$B/cuda_streams --launches 400000 --streams 4 & python3 bench/h100/torch_tiny_ops.py --iters 640000; wait" 2>&1 | tail -1
echo "record wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
q /tmp/m.gpuobs
python3 bench/h100/stack_stats.py /tmp/m.gpuobs | grep -E "GPU calls|depth|ending|reach"
rm -f /tmp/m.gpuobs
echo "=== launch loop: none, floor, fp, no stack, dwarf 16K/32K, bpf"
$B/gpuobs_bench launch-loop --lib "$PWD/$B/libcuda.so.1" --calls 200000 --rounds 5 | tail -5
