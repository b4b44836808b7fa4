#!/usr/bin/env bash
# gpuobs record killed with -9 while launch_workload launches at full rate on
# the fake libcuda (THREADS threads, 3.5 s, 3 runs). From the workload's own
# progress file ("MONO_NS COUNT" every 50 ms) and the capture: launches issued
# by the kill, stored, counted as dropped (ring full, store backlog), and
# unaccounted (neither stored nor counted: what the kill took), with the
# window it spans (the kill minus the last moment by which more had been
# issued than the capture accounts for). Documented bound: 400 ms.
# usage: bench/h100/run_issue15_kill.sh OUTDIR THREADS   (as root; B= the binaries)
set -uo pipefail
B=${B:-.device-build}
OUT=$1 T=${2:-1}
LIB="$PWD/$B/libcuda.so.1"
echo; echo "=== kill -9 at full launch rate: fake libcuda, $T thread(s), 3 runs"
for run in 1 2 3; do
  rm -f "$OUT"/k.gpuobs* "$OUT/progress"
  "$B/gpuobs" record -o "$OUT/k.gpuobs" --libcuda "$LIB" -- "$B/launch_workload" --lib "$LIB" \
    --threads "$T" --launches 1000000000 --truth "$OUT/t.json" --progress "$OUT/progress" 2>/dev/null &
  R=$!
  sleep 3.5
  t_kill=$(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
  kill -9 $R; wait $R 2>/dev/null
  pkill -9 -f "launch_workload --lib $LIB"; sleep 0.3
  q() { "$B/gpuobs" sql --format csv "$1" "$OUT/k.gpuobs" | tail -1; }
  stored=$(q "SELECT count(*) FROM kernel_launches")
  ring=$(q "SELECT coalesce(sum(value), 0) FROM counters WHERE name LIKE 'dropped%ringbuf_full' OR name LIKE 'dropped%inflight_full'")
  backlog=$(q "SELECT coalesce(sum(value), 0) FROM counters WHERE name = 'dropped_store_backlog'")
  state=$(q "SELECT state FROM capture")
  python3 - "$OUT/progress" "$t_kill" "$stored" "$ring" "$backlog" "$state" <<'PY'
import sys
prog = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
t_kill, stored, ring, backlog = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
by = lambda t: max([n for (pt, n) in prog if pt <= t] or [0])
accounted = stored + ring + backlog
issued = by(t_kill)
# The last progress point whose count the capture still accounts for.
covered = max([pt for (pt, n) in prog if pt <= t_kill and n <= accounted] or [prog[0][0]])
rate = (prog[-1][1] - prog[0][1]) / ((prog[-1][0] - prog[0][0]) / 1e9) if len(prog) > 1 else 0
print(f"rate {rate:,.0f}/s; issued by the kill {issued}; stored {stored}; dropped: ring {ring}, store backlog {backlog}; "
      f"unaccounted {max(0, issued - accounted)}, all issued more than {(t_kill - covered) / 1e6:.0f} ms before the kill "
      f"accounted for (stored or counted); state {sys.argv[6]}")
PY
done
