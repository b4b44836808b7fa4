#!/usr/bin/env bash
# Issue 17, the build at the end of the second round on the lent H100:
# pipeline_bench (8 x 187,500 launches/s for 10 s; 1 process x 3 M), the
# PyTorch transformer training recorded and under gpuobsd (300 steps), and a
# 3000-step recording (bytes per launch once startup costs are spread).
# usage: bench/h100/run_issue17_final.sh [OUTDIR]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-issue17}}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
echo "=== pipeline 8 x 187500/s 10 s, steps of 1000"
"$B/pipeline_bench" --procs 8 --seconds 10 --rate 187500 2>&1 | tail -10
echo; echo "=== pipeline 1 x 3M"
"$B/pipeline_bench" --procs 1 --launches 3000000 --no-limit 2>&1 | tail -8
echo; echo "=== PyTorch 300 steps"
B=$B bash bench/h100/run_issue17_torch.sh 300 "$OUT"
echo; echo "=== PyTorch 3000 steps, gpuobs record -f"
"$B/gpuobs" record -f -o "$OUT/train3000.gpuobs" -- $PY bench/h100/torch_transformer_train.py 3000 2>&1 | tail -2
S=$(stat -c %s "$OUT/train3000.gpuobs")
"$B/gpuobs" sql "SELECT (SELECT sum(launches) FROM launch_agg) AS launches, $S AS bytes, round($S * 1.0 / (SELECT sum(launches) FROM launch_agg), 2) AS per_launch, (SELECT count(*) FROM copies) AS copies, (SELECT count(*) FROM gpu_modules) AS module_calls" "$OUT/train3000.gpuobs"
"$B/gpuobs" sql "SELECT name, sum(pgsize) AS bytes, round(sum(pgsize) * 1.0 / (SELECT sum(launches) FROM launch_agg), 2) AS per_launch FROM dbstat GROUP BY name ORDER BY bytes DESC LIMIT 8" "$OUT/train3000.gpuobs"
rm -f "$OUT/train3000.gpuobs" "$OUT/train.gpuobs" "$OUT/daemon.gpuobs"
