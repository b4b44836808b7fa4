#!/usr/bin/env bash
# The exec record wakes gpuobs's reader (bpf/process.bpf.h), so a Python
# program's interpreter is described to BPF before its first launch. On a
# lent GPU host (as root, from the repo root): tests/workloads/python_launches.py
# (10 launches, the first about 13 ms after exec on the dev VM) under gpuobs
# record with each --unwind, RUNS times: launches with a Python walk
# (counter python_stacks) of the 10; then issue 18's PyTorch coverage
# (PART=coverage bench/h100/run_issue18.sh) as the real-driver check.
set -uo pipefail
B=${B:-.device-build}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
nvidia-smi -L; nproc; "$PY" --version
T=$(mktemp -d)
for u in fp dwarf bpf; do
  got=''
  for r in $(seq 1 "${RUNS:-5}"); do
    "$B/gpuobs" record -f --libcuda "$B/libcuda.so.1" --unwind $u -o "$T/p.gpuobs" -- \
      "$PY" tests/workloads/python_launches.py "$B/libcuda.so.1" 0.5 >/dev/null 2>&1
    got="$got $("$B/gpuobs" sql --format csv "SELECT (SELECT value FROM counters WHERE name = 'python_stacks') || '/' ||
      (SELECT count(*) FROM kernel_launches) || ' (first launch ' || (SELECT (min(k.ts_mono_ns) - p.exec_mono_ns) / 1000000
      FROM kernel_launches k, processes p WHERE p.exec_mono_ns IS NOT NULL) || ' ms after exec)'" "$T/p.gpuobs" | tail -1)"
  done
  echo "--unwind $u: launches with Python frames:$got"
done
PART=coverage timeout 300 bash bench/h100/run_issue18.sh 2>&1 | tail -25
