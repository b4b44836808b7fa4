#!/usr/bin/env bash
# Issue 17 with launch runs (schema 16) on the lent H100: the pipeline and
# PyTorch figures of run_issue17_final.sh, then issue 15's kill -9 at full
# launch rate (1 and 4 threads), whose bound depends on the writer keeping up.
# usage: bench/h100/run_issue17_runs.sh [OUTDIR]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-issue17}}
mkdir -p "$OUT"
nproc; lscpu | grep -E "Model name|MHz" | head -2
B=$B bash bench/h100/run_issue17_final.sh "$OUT"
B=$B bash bench/h100/run_issue15_kill.sh "$OUT" 1
B=$B bash bench/h100/run_issue15_kill.sh "$OUT" 4
