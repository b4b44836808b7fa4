#!/usr/bin/env bash
# Issue 17 with launch runs (schema 16) on the lent H100: the pipeline and
# PyTorch figures of run_issue17_final.sh; the pipeline again for 20 s (do
# ring drops grow with time, or come at the start?) and with a 64 MB ring;
# the replay and Perfetto export of the 3000-step capture (launches read
# through kernel_launches_between); then issue 15's kill -9 at full launch
# rate (1 and 4 threads), whose bound depends on the writer keeping up.
# usage: bench/h100/run_issue17_runs.sh [OUTDIR]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-issue17}}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
mkdir -p "$OUT"
nproc; lscpu | grep -E "Model name" | head -1
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
echo "=== pipeline 8 x 187500/s 10 s, steps of 1000"
"$B/pipeline_bench" --procs 8 --seconds 10 --rate 187500 2>&1 | tail -10
echo; echo "=== pipeline 8 x 187500/s 20 s"
"$B/pipeline_bench" --procs 8 --seconds 20 --rate 187500 --no-limit 2>&1 | tail -8
echo; echo "=== pipeline 8 x 187500/s 10 s, --ring-mb 64"
"$B/pipeline_bench" --procs 8 --seconds 10 --rate 187500 --ring-mb 64 --no-limit 2>&1 | tail -8
echo; echo "=== pipeline 1 x 3M"
"$B/pipeline_bench" --procs 1 --launches 3000000 --no-limit 2>&1 | tail -8
echo; echo "=== PyTorch 300 steps"
B=$B bash bench/h100/run_issue17_torch.sh 300 "$OUT"
echo; echo "=== PyTorch 3000 steps, gpuobs record -f"
"$B/gpuobs" record -f -o "$OUT/train3000.gpuobs" -- $PY bench/h100/torch_transformer_train.py 3000 2>&1 | tail -2
S=$(stat -c %s "$OUT/train3000.gpuobs")
"$B/gpuobs" sql "SELECT (SELECT sum(launches) FROM launch_agg) AS launches, $S AS bytes, round($S * 1.0 / (SELECT sum(launches) FROM launch_agg), 2) AS per_launch" "$OUT/train3000.gpuobs"
"$B/gpuobs" sql "SELECT name, sum(pgsize) AS bytes, round(sum(pgsize) * 1.0 / (SELECT sum(launches) FROM launch_agg), 2) AS per_launch FROM dbstat GROUP BY name ORDER BY bytes DESC LIMIT 6" "$OUT/train3000.gpuobs"
echo; echo "=== reading it back: launches through kernel_launches_between, the view, a windowed report, replay, export"
t() { local s; s=$(date +%s.%N); "$@" > /dev/null 2>&1; echo "rc $? $(python3 -c "print(round($(date +%s.%N) - $s, 2))") s: ${*:1:4}"; }
t "$B/gpuobs" sql "SELECT count(*) FROM kernel_launches_between()" "$OUT/train3000.gpuobs"
t "$B/gpuobs" sql "SELECT count(*) FROM kernel_launches" "$OUT/train3000.gpuobs"
t "$B/gpuobs" report kern_sum --since 10 --until 20 "$OUT/train3000.gpuobs"
t "$B/gpuobs" replay "$OUT/train3000.gpuobs"
t "$B/gpuobs" export perfetto -o "$OUT/t.pftrace" "$OUT/train3000.gpuobs"
rm -f "$OUT/train3000.gpuobs" "$OUT/train.gpuobs" "$OUT/daemon.gpuobs" "$OUT/t.pftrace"
B=$B bash bench/h100/run_issue15_kill.sh "$OUT" 1
B=$B bash bench/h100/run_issue15_kill.sh "$OUT" 4
