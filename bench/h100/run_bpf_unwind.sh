#!/usr/bin/env bash
# --unwind bpf on a GPU host. Unwind tables are built once per library file,
# in the background; a process's calls before its libraries' tables are
# ready keep frame-pointer stacks. So each capture first runs a short
# PyTorch process (building libtorch's tables), waits, then measures:
# depth and Python reach, the million-call capture, and the cost per call
# against fp, dwarf (user space) and no stacks.
# usage: bench/h100/run_bpf_unwind.sh   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
q() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT group_concat(name || '=' || value, ' ') FROM counters WHERE name LIKE 'unwind%' OR name LIKE 'bpf_unw%' OR name LIKE 'dropped%' OR name LIKE 'stack_walks%'\").fetchone()[0])" "$1"; }
WARM="python3 bench/h100/torch_tiny_ops.py --iters 1000 >/dev/null; sleep ${WARM_S:-25}"
echo "=== PyTorch tiny ops, 300,000 ops, --unwind bpf (after a warm-up process)"
$B/gpuobs record -o /tmp/bpf.gpuobs --unwind bpf -- sh -c "$WARM; python3 bench/h100/torch_tiny_ops.py --iters 300000" 2>&1 | tail -1
q /tmp/bpf.gpuobs
python3 bench/h100/stack_stats.py /tmp/bpf.gpuobs | grep -vE "rows,"
python3 - /tmp/bpf.gpuobs <<'PY'
import sqlite3, sys
d = sqlite3.connect(sys.argv[1])
for pid, n, full in d.execute("""SELECT k.process_id, count(*), sum(k.stack_id IN (SELECT stack_id FROM stack_symbols
        WHERE symbol LIKE '%PyEval_EvalFrame%')) FROM kernel_launches k GROUP BY 1"""):
    print(f"process {pid}: {n} launches, {full} with a stack reaching the Python interpreter")
PY
echo "=== 1M GPU calls with --unwind bpf (after a warm-up process)"
t0=$(date +%s%N)
$B/gpuobs record -o /tmp/m.gpuobs --unwind bpf --ring-mb 64 -- sh -c \
  "$WARM; $B/cuda_streams --launches 400000 --streams 4 & python3 bench/h100/torch_tiny_ops.py --iters 640000; wait" 2>&1 | tail -1
echo "record wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (includes the warm-up)"
q /tmp/m.gpuobs
python3 bench/h100/stack_stats.py /tmp/m.gpuobs | grep -E "GPU calls|depth|ending|reach"
rm -f /tmp/m.gpuobs /tmp/bpf.gpuobs
echo "=== launch loop: none, floor, fp, no stack, dwarf 16K/32K, bpf"
$B/gpuobs_bench launch-loop --lib "$PWD/$B/libcuda.so.1" --calls 200000 --rounds 5 | tail -5
