#!/usr/bin/env bash
# GPU check of issue 7 on an NVIDIA host: the 4-stream pipeline with
# cross-stream events replays with every wait resolved and no hazard; the
# buggy variant is flagged with the right stacks; every export is written and
# decoded. usage: bench/h100/run_replay.sh   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${OUT:-/tmp}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
head -1 /proc/driver/nvidia/version
Q() { $B/gpuobs sql "$1" "$2" --format table; }
for variant in none all; do
  f=/tmp/replay-$variant.gpuobs
  echo "=== stream_pipeline --bug $variant"
  $B/gpuobs record -f -o $f -- $B/stream_pipeline --iterations 50 --bug $variant 2>&1 | tail -2
  Q "SELECT name, value FROM counters WHERE value != 0 AND name LIKE 'dropped%'" $f
  echo "--- API rows: launches, copies, stream_ops by op, syncs"
  Q "SELECT 'launches', count(*) FROM kernel_launches UNION ALL SELECT 'copies+memsets', count(*) FROM copies
     UNION ALL SELECT 'stream_ops ' || op, count(*) FROM stream_ops GROUP BY op
     UNION ALL SELECT 'syncs ' || target, count(*) FROM syncs GROUP BY target" $f
  echo "--- replay"
  /usr/bin/time -f "replay: %e s, %M KiB peak" $B/gpuobs replay $f
  echo "--- waits without a dependency (should be 0 for --bug none)"
  Q "SELECT count(*) AS waits, sum(NOT EXISTS (SELECT 1 FROM replay_deps d WHERE d.op_id = o.id AND d.kind = 'event')) AS unresolved
     FROM replay_ops o WHERE o.kind = 'wait_event'" $f
  echo "--- ops never proven complete"
  Q "SELECT count(*) FROM replay_ops WHERE latest_end_ns IS NULL" $f
  echo "--- hazards with the top frames of their stacks"
  Q "SELECT h.kind, h.detail, (SELECT group_concat(symbol, ' <- ') FROM (SELECT symbol FROM stack_symbols ss
       WHERE ss.stack_id = h.stack_id ORDER BY position LIMIT 5)) AS stack FROM replay_hazards h ORDER BY h.id" $f
  for fmt in perfetto chrome pprof folded; do
    o=$OUT/replay-$variant.$fmt
    /usr/bin/time -f "export $fmt: %e s, %M KiB peak" $B/gpuobs export $fmt $f -o $o 2>&1 | tail -1
    ls -l $o | awk '{print $5, $9}'
  done
done
echo "=== is a Perfetto trace processor available here? (python perfetto package)"
python3 -c "import perfetto, sys; print('perfetto', getattr(perfetto, '__version__', '?'))" 2>&1 | tail -1
