#!/usr/bin/env bash
# Issue 15 on the lent H100, with the merged build (B=.device-build):
#   1. the libraries cases (run_issue15_libs.sh: LD_LIBRARY_PATH, dlopen by
#      path, short-lived processes under gpuobsd);
#   2. gpuobs record killed with -9 while launch_workload launches at full rate
#      on the fake libcuda (4 threads): launches issued by the kill, stored,
#      and how long before the kill the oldest missing launch was issued
#      (documented bound: 400 ms); the capture says 'incomplete' and gpuobs
#      check passes;
#   3. a clean run says 'complete'; -f -o /dev/null is refused.
# usage: bench/h100/run_issue15_final.sh [OUTDIR]   (as root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-issue15}}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
[ "${SKIP_LIBS:-0}" = 1 ] || B=$B bash bench/h100/run_issue15_libs.sh "$OUT"

for t in 1 4; do B=$B bash bench/h100/run_issue15_kill.sh "$OUT" $t; done

echo; echo "=== 3. a clean run, and -f -o /dev/null"
"$B/gpuobs" record -f -o "$OUT/c.gpuobs" -- "$B/cuda_streams" --launches 2000 --streams 4 2>&1 | tail -1
"$B/gpuobs" report capture "$OUT/c.gpuobs" | grep -E "state|dropped|launch" | head -8
"$B/gpuobs" record -f -o /dev/null -- true; echo "exit $? ; /dev/null is $(stat -c %F /dev/null)"
