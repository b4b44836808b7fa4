#!/usr/bin/env bash
# Issue 21 on the GPU host: gpuobs diff over PyTorch training runs, and the
# idle-time reports next to what --gpu-time measured.
#   PART=diff: two identical runs (batch 32) and one with batch 64, 60 steps
#     each; gpuobs diff of the identical pair and of 32 vs 64.
#   PART=idle: one run with a 20 ms host stall before every 10th step,
#     recorded plainly and with --gpu-time; gpuobs replay, then gpu_idle,
#     launch_gaps, queue_depth of both (estimated vs measured).
# usage: PART=diff|idle bench/h100/run_issue21.sh [BUILD_DIR]   (root; logs to $OUT)
set -uo pipefail
D=${1:-.device-build}
D=$(cd "$D" && pwd)
OUT=${OUT:-/tmp/issue21}
mkdir -p "$OUT"
PY=/opt/torch/.venv/bin/python
TRAIN=$(cd "$(dirname "$0")" && pwd)/torch_train.py
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
G=$D/gpuobs
w=$(mktemp -d)
say() { echo; echo "### $*"; }
case ${PART:-diff} in
diff)
  for run in a b; do
    say "record batch 32 ($run)"
    /usr/bin/time -f "%e s wall" "$G" record -o "$w/bs32_$run.gpuobs" -- "$PY" "$TRAIN" 60 32 2>&1 | tail -3
  done
  say "record batch 64"
  /usr/bin/time -f "%e s wall" "$G" record -o "$w/bs64.gpuobs" -- "$PY" "$TRAIN" 60 64 2>&1 | tail -3
  for f in bs32_a bs32_b bs64; do "$G" report capture "$w/$f.gpuobs" --format csv | grep -E "^(kernel_launches|duration_s|processes)," | sed "s/^/$f: /"; done
  say "diff bs32_a bs32_b (identical runs)"
  /usr/bin/time -f "%e s wall, %M KiB peak" "$G" diff "$w/bs32_a.gpuobs" "$w/bs32_b.gpuobs" --wide
  "$G" diff "$w/bs32_a.gpuobs" "$w/bs32_b.gpuobs" --all --format json > "$w/same.json" 2>/dev/null
  python3 -c '
import json; rows = json.load(open("'"$w"'/same.json"))
import collections; c = collections.Counter((r["verdict"]) for r in rows)
m = max((abs(r["effect"]) for r in rows if r["effect"] is not None and r["unit"].startswith("ns")), default=0)
print("identical pair: rows", len(rows), dict(c), "largest |delta| of a timing row", m)'
  say "diff bs32_a bs64 (batch 32 -> 64)"
  /usr/bin/time -f "%e s wall, %M KiB peak" "$G" diff "$w/bs32_a.gpuobs" "$w/bs64.gpuobs" --wide | cut -c1-400 | head -60
  say "the same, --fail-on"
  "$G" diff "$w/bs32_a.gpuobs" "$w/bs64.gpuobs" --format csv --fail-on 'p95_latency>+10%,new_kernels>0,launches>+5%' >/dev/null; echo "exit $?"
  "$G" diff "$w/bs32_a.gpuobs" "$w/bs64.gpuobs" --all --format json > "$w/bs.json" 2>/dev/null
  python3 -c '
import json, collections; rows = json.load(open("'"$w"'/bs.json"))
print("32 vs 64: rows", len(rows), dict(collections.Counter(r["verdict"] for r in rows)))
print("by measure:", dict(collections.Counter((r["measure"], r["verdict"]) for r in rows if r["verdict"] != "same")))'
  ;;
idle)
  say "record, 20 ms stall every 10th step (plain)"
  "$G" record -o "$w/plain.gpuobs" -- "$PY" "$TRAIN" 60 32 20 2>&1 | tail -2
  say "record, the same with --gpu-time"
  "$G" record --gpu-time -o "$w/gt.gpuobs" -- "$PY" "$TRAIN" 60 32 20 2>&1 | tail -2
  for f in plain gt; do
    say "$f: replay"
    /usr/bin/time -f "%e s wall, %M KiB peak" "$G" replay "$w/$f.gpuobs" | tail -5
    for r in gpu_idle launch_gaps queue_depth; do
      say "$f: report $r"
      "$G" report "$r" "$w/$f.gpuobs" --wide | cut -c1-300 | head -20
    done
    "$G" report gpu_idle_buckets "$w/$f.gpuobs" --format csv 2>/dev/null | head -12
  done
  ;;
esac
rm -rf "$w"
