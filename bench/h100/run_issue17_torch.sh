#!/usr/bin/env bash
# Issue 17 on the lent H100: bytes per launch of a PyTorch transformer
# training loop (bench/h100/torch_transformer_train.py), recorded two ways:
#   1. gpuobs record -f (stacks on, the default), the capture finished (WAL
#      folded in): file size / launches, and the bytes of each table (dbstat);
#   2. gpuobsd --db with the training started after it: the same figures, and
#      the daemon's CPU time per stored event (utime + stime from /proc).
# usage: bench/h100/run_issue17_torch.sh [STEPS] [OUTDIR]   (as root)
set -uo pipefail
B=${B:-.device-build}
STEPS=${1:-300}
OUT=${2:-${OUT:-/tmp/gpuobs-issue17}}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing

sizes() {  # FILE: launches, bytes, bytes per launch, shapes, names, and the largest tables
  local f=$1
  "$B/gpuobs" sql "SELECT (SELECT sum(launches) FROM launch_agg) AS launches, (SELECT count(*) FROM launch_shapes) AS shapes,
    (SELECT count(*) FROM strings) AS strings, (SELECT count(*) FROM launch_counts) AS count_rows,
    (SELECT count(*) FROM api_calls_timed) AS other_calls, (SELECT count(*) FROM ioctls) AS ioctls" "$f"
  local size launches
  size=$(stat -c %s "$f")
  launches=$("$B/gpuobs" sql "SELECT sum(launches) FROM launch_agg" "$f" --format csv | tail -1)
  echo "file bytes $size, launches $launches, bytes per launch $(python3 -c "print(round($size / max(1, $launches), 2))")"
  "$B/gpuobs" sql "SELECT name, sum(pgsize) AS bytes, round(sum(pgsize) * 1.0 / $launches, 2) AS per_launch FROM dbstat
    GROUP BY name ORDER BY bytes DESC LIMIT 8" "$f"
}

echo "=== 1. gpuobs record -f, $STEPS steps"
"$B/gpuobs" record -f -o "$OUT/train.gpuobs" -- $PY bench/h100/torch_transformer_train.py "$STEPS" 2>&1 | tail -3
sizes "$OUT/train.gpuobs"
"$B/gpuobs" report capture "$OUT/train.gpuobs" | grep -E "state|dropped|failed|stored_launch"

echo; echo "=== 2. gpuobsd --db, $STEPS steps started after it"
rm -f "$OUT/daemon.gpuobs"
"$B/gpuobsd" --db "$OUT/daemon.gpuobs" --state-dir "$OUT/state" --status-file "$OUT/status.json" --log-level warn \
  2>"$OUT/gpuobsd.err" &
D=$!
for i in $(seq 100); do [ -s "$OUT/status.json" ] && break; sleep 0.1; done
cpu() { awk '{print $14 + $15}' /proc/$D/stat; }
C0=$(cpu)
$PY bench/h100/torch_transformer_train.py "$STEPS"
sleep 1
C1=$(cpu)
kill -TERM $D; wait $D
TCK=$(getconf CLK_TCK)
sizes "$OUT/daemon.gpuobs"
EV=$("$B/gpuobs" sql "SELECT (SELECT sum(launches) FROM launch_agg) + (SELECT count(*) FROM api_calls_timed) + (SELECT count(*) FROM ioctls)" "$OUT/daemon.gpuobs" --format csv | tail -1)
echo "daemon CPU while training: $(( (C1 - C0) * 1000 / TCK )) ms for $EV stored events: $(python3 -c "print(round(($C1 - $C0) / $TCK * 1e9 / max(1, $EV)), 'ns per event')")"
"$B/gpuobs" report capture "$OUT/daemon.gpuobs" | grep -E "state|dropped|failed"
