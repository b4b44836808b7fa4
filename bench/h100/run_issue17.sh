#!/usr/bin/env bash
# Issue 17 on the lent H100 (16 cores), with the staged build (B=.device-build):
#   1. pipeline_bench: 8 processes offering 1.5 M launches/s for 10 s on the
#      fake libcuda against gpuobsd --db (default ring), each repeating a step
#      of 1000 distinct launches (a training step's shape); then every launch
#      different (launch_workload's formula: grid_x = i + 1, the worst case
#      for the compact capture); stored, drops, daemon CPU per event, bytes
#      per launch, last launch -> complete, and the SQLite limit of the run;
#   2. one process launching 3 M times as fast as it can against two x 1.5 M
#      (the 6-minute case of the issue);
#   3. the PyTorch transformer training loop (run_issue17_torch.sh).
# usage: bench/h100/run_issue17.sh [OUTDIR]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-issue17}}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
nproc; head -1 /proc/driver/nvidia/version 2>/dev/null
echo "=== 1a. 8 processes x 187,500 launches/s (1.5 M/s) for 10 s, steps of 1000 launches"
"$B/pipeline_bench" --procs 8 --seconds 10 --rate 187500 2>&1 | tail -40
echo; echo "=== 1b. the same, every launch different"
"$B/pipeline_bench" --procs 8 --seconds 10 --rate 187500 --distinct 0 2>&1 | tail -40
echo; echo "=== 1c. 8 processes as fast as they go for 5 s, steps of 1000 launches"
"$B/pipeline_bench" --procs 8 --seconds 5 2>&1 | tail -40
[ "${SKIP_ONE:-0}" = 1 ] || {
echo; echo "=== 2. one process x 3 M as fast as it can, then two x 1.5 M"
"$B/pipeline_bench" --procs 1 --launches 3000000 --no-limit 2>&1 | tail -25
"$B/pipeline_bench" --procs 2 --launches 1500000 --no-limit 2>&1 | tail -25
}
[ "${SKIP_TORCH:-0}" = 1 ] || { echo; echo "=== 3. PyTorch transformer training"
B=$B bash bench/h100/run_issue17_torch.sh "${STEPS:-300}" "$OUT"; }
