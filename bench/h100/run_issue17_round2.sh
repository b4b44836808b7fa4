#!/usr/bin/env bash
# Issue 17, second round on the lent H100 (schema 14: counts once a second,
# 64-row launch inserts, the shape table, interned call text):
#   1. writer_bench and pipeline_bench (run_issue17_writer.sh);
#   2. every launch different, 8 x 187,500/s (the worst case);
#   3. the PyTorch transformer training, record and gpuobsd (run_issue17_torch.sh).
# usage: bench/h100/run_issue17_round2.sh [OUTDIR]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-issue17}}
mkdir -p "$OUT"
bash bench/h100/run_issue17_writer.sh
echo; echo "=== pipeline 8 x 187500/s 10 s, every launch different"
"$B/pipeline_bench" --procs 8 --seconds 10 --rate 187500 --distinct 0 2>&1 | tail -12
echo; echo "=== PyTorch transformer training"
B=$B bash bench/h100/run_issue17_torch.sh "${STEPS:-300}" "$OUT"
