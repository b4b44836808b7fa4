#!/usr/bin/env bash
# Issue 17, third round on the lent H100: the daemon with raw-key shape
# lookup, one move per event and the 64 MiB default ring, against the
# previous build (gpuobsd_old in $B, same tree before those changes), in
# alternation; then --unwind bpf at --stack-depth 1 and 64 on PyTorch (the
# BPF walk now steps out of a probed function's entry before its loop).
# usage: [PART=pipeline|torch] bench/h100/run_issue17_round3.sh   (as root, from the repo root)
# A pipeline run takes about 2.5 minutes on the H100 host (the bench's setup
# and teardown): PART splits the script between calls of 10 minutes.
set -uo pipefail
B=${B:-.device-build}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
nproc; lscpu | grep -E "Model name" | head -1
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
pb() { "$B/pipeline_bench" "$@" --no-limit 2>&1 | grep -E "^(offered|stored|drops|cpu|complete|on disk)" | sed -E 's/api_entry_stale.*dropped_launch_ringbuf_full=([0-9]+).*dropped_store_backlog=([0-9]+).*/ring_full=\1 store_backlog=\2/'; }
PART=${PART:-all}
if [ "$PART" = all ] || [ "$PART" = pipeline ]; then
for round in 1 2; do
  echo "=== round $round: 8 x 187500/s 10 s, new build, default ring (64 MiB) [$(date +%T)]"
  pb --procs 8 --seconds 10 --rate 187500
  echo "=== round $round: 8 x 187500/s 10 s, old build, its default ring (16 MiB) [$(date +%T)]"
  pb --procs 8 --seconds 10 --rate 187500 --ring-mb 16 --gpuobsd "$B/gpuobsd_old"
  echo "=== round $round: 8 x 187500/s 10 s, new build, --ring-mb 16 (CPU against old at the same ring) [$(date +%T)]"
  pb --procs 8 --seconds 10 --rate 187500 --ring-mb 16
done
for b in gpuobsd gpuobsd_old; do
  echo "=== 1 x 3M as fast as it goes, $b [$(date +%T)]"
  pb --procs 1 --launches 3000000 --gpuobsd "$B/$b"
done
fi
if [ "$PART" = all ] || [ "$PART" = torch ]; then
for d in 1 64; do
  echo "=== PyTorch training 200 steps, --unwind bpf --stack-depth $d (after a warm-up process builds the tables)"
  "$B/gpuobs" record -o /tmp/u$d.gpuobs --unwind bpf --stack-depth $d -- sh -c \
    "$PY bench/h100/torch_transformer_train.py 20 >/dev/null; sleep 20; $PY bench/h100/torch_transformer_train.py 200" 2>&1 | tail -1
  "$B/gpuobs" sql "SELECT count(*) AS launches, sum(k.stack_id IS NOT NULL) AS with_stack,
     sum(s.depth >= 1) AS depth_ge_1, max(s.depth) AS max_depth,
     sum(k.stack_id IN (SELECT stack_id FROM stack_symbols WHERE symbol LIKE '%PyEval_EvalFrame%')) AS reach_python
     FROM kernel_launches_between() k LEFT JOIN stacks s ON s.id = k.stack_id" /tmp/u$d.gpuobs
  "$B/gpuobs" sql "SELECT name, value FROM counters WHERE name IN ('bpf_unwound','stack_empty','stack_maps_reads','stack_maps_unreadable','dropped_launch_ringbuf_full')" /tmp/u$d.gpuobs
  rm -f /tmp/u$d.gpuobs
done
fi
