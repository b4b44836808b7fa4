#!/usr/bin/env bash
# Issue 41 on the H100: a capture's schedule re-executed on the GPU
# (gpuobs replay --execute, docs/replay.md "Execute") and compared with the
# original, for the bundled 4-stream example and a 3-stream PyTorch training
# loop of 300 steps, RUNS runs each (median), then the what-if "no host gaps".
# usage: B=.device-table OUT=$OUT RUNS=5 bash bench/h100/run_issue41.sh
#   B holds gpuobs, gpuobs_replay_exec, libgpuobs_cupti_inject.so, cuda_streams.
set -u
B=$(realpath "${B:-.device-table}")
OUT=${OUT:-/tmp/issue41-out}
W=/tmp/issue41  # the captures (large); $OUT gets the summaries and a tarball of the small files
RUNS=${RUNS:-5}
REPO=$(pwd)
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PY=/opt/torch/.venv/bin/python
mkdir -p "$OUT" "$W"
cd "$W" || exit 1
echo "commit: $(cat "$B/COMMIT" 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
"$B/gpuobs_replay_exec" --probe
step() {  # name, then the command; its time and status on one line
  local name=$1
  shift
  local t0=$(date +%s%N)
  "$@" >"$name.txt" 2>&1
  local rc=$?
  echo "== $name: rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  tail -n 22 "$name.txt"
}
step ex_record "$B/gpuobs" record --gpu-time -f -o ex.gpuobs -- "$B/cuda_streams" --launches 20000
step ex_exec "$B/gpuobs" replay ex.gpuobs --execute --runs "$RUNS"
"$B/gpuobs" report replay_exec_sum ex.gpuobs
step ex_nogaps "$B/gpuobs" replay ex.gpuobs --execute --runs 3 --no-host-gaps --exec-out ex.nogaps
step tr_record "$B/gpuobs" record --gpu-time -f -o tr.gpuobs -- $PY "$REPO/bench/h100/torch_streams_train.py" 300
"$B/gpuobs" report replay_queues tr.gpuobs 2>/dev/null | head -12
step tr_exec "$B/gpuobs" replay tr.gpuobs --execute --runs "$RUNS"
"$B/gpuobs" report replay_exec_sum tr.gpuobs
step tr_nogaps "$B/gpuobs" replay tr.gpuobs --execute --runs 3 --no-host-gaps --exec-out tr.nogaps
"$B/gpuobs" report replay_exec_sum tr.gpuobs
head -c 1500 tr.exec.1.report.jsonl
ls -la
tar czf "$OUT/small.tgz" ./*.txt ./*.jsonl ./*.log 2>/dev/null
