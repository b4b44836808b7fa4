#!/usr/bin/env bash
# This round's one-GPU measurements (as root, from the repo root; logs in OUT):
#   CALL=1: issue 18's cost, the launch probe's own run time (kernel BPF
#           statistics) with Python frames off and on: PyTorch's tiny-op
#           loop (the issue's bench) and the ctypes loop 1, 10 and 40 frames
#           deep, 5 alternating rounds; issue 17's bytes per launch of the
#           PyTorch transformer training at 300 and 1000 steps.
#   CALL=2: issue 18's cost end to end: the tiny-op loop pinned to one CPU,
#           5 rotating rounds of no gpuobs, the empty-uprobe floor, gpuobs
#           with Python frames off, and on (the default).
set -uo pipefail
OUT=${OUT:-/tmp/round}
mkdir -p "$OUT"
export B=${B:-.device-build}
PY=/opt/torch/.venv/bin/python3
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
nvidia-smi -L; nproc; lscpu | grep 'Model name'
if [ "${CALL:-1}" = 1 ]; then
  ROUNDS=5 timeout 330 bash bench/python/bpf_cost.sh "$PY" 100000 torch 1 10 40 >"$OUT/issue18-bpfcost.log" 2>&1
  for steps in 300 1000; do
    timeout 100 bash bench/h100/run_issue17_torch.sh $steps /tmp/i17-$steps >"$OUT/issue17-torch-$steps.log" 2>&1
  done
else
  MODES="none floor nopy gpuobs" PIN=3 PATH=$(dirname "$PY"):$PATH timeout 500 \
    bash bench/h100/torch_overhead.sh 300000 5 >"$OUT/issue18-tinyops-pinned.log" 2>&1
fi
tail -n 6 "$OUT"/*.log
