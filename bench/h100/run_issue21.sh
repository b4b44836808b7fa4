#!/usr/bin/env bash
# Issue 21 on the GPU host: gpuobs diff over PyTorch training runs, and the
# idle-time reports next to what --gpu-time measured.
#   PART=diff: two identical runs (batch 32) and one with batch 64, 60 steps
#     each; gpuobs diff of the identical pair and of 32 vs 64.
#   PART=idle: one run with a 20 ms host stall before every 10th step,
#     recorded plainly and with --gpu-time; gpuobs replay, then gpu_idle,
#     launch_gaps, queue_depth of both (estimated vs measured).
# usage: PART=diff|idle|all bench/h100/run_issue21.sh [BUILD_DIR]   (root; logs to $OUT)
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
parts=${PART:-diff}
[ "$parts" = all ] && parts="diff idle"
for part in $parts; do
case $part in
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
  /usr/bin/time -f "%e s wall, %M KiB peak" "$G" diff "$w/bs32_a.gpuobs" "$w/bs64.gpuobs" --format json > "$w/bs_changed.json"
  python3 -c '
import json; rows = json.load(open("'"$w"'/bs_changed.json"))
for r in rows:
    print(" | ".join(str(r[k])[:70] for k in ("verdict", "measure", "name", "stream", "unit", "base", "new", "change_pct", "q_value", "effect", "impact_ns")), "|", (r["stack"] or "")[:160])'
  python3 -c '
import json; rows = json.load(open("'"$w"'/same.json"))
top = sorted((r for r in rows if r["effect"] is not None and r["unit"].startswith("ns")), key=lambda r: -abs(r["effect"]))[:5]
print("identical pair, the 5 timing rows of largest |delta|:")
for r in top: print(" ", r["measure"], r["name"][:60], r["stream"], "p50", r["base"], "->", r["new"], "change", r["change_pct"], "q", r["q_value"], "delta", r["effect"])' 
  say "the same, --fail-on"
  "$G" diff "$w/bs32_a.gpuobs" "$w/bs64.gpuobs" --format csv --fail-on 'p95_latency>+10%,new_kernels>0,launches>+5%' >/dev/null; echo "exit $?"
  "$G" diff "$w/bs32_a.gpuobs" "$w/bs64.gpuobs" --all --format json > "$w/bs.json" 2>/dev/null
  python3 -c '
import json, collections; rows = json.load(open("'"$w"'/bs.json"))
print("32 vs 64: rows", len(rows), dict(collections.Counter(r["verdict"] for r in rows)))
print("by measure:", dict(collections.Counter((r["measure"], r["verdict"]) for r in rows if r["verdict"] != "same")))'
  ;;
fp)
  # The false-positive rate on the GPU host: 10 identical runs, 45 pairs.
  for i in $(seq 1 10); do "$G" record -o "$w/fp$i.gpuobs" -- "$PY" "$TRAIN" 60 32 >/dev/null 2>&1; done
  for i in $(seq 1 10); do for j in $(seq $((i + 1)) 10); do
    "$G" diff "$w/fp$i.gpuobs" "$w/fp$j.gpuobs" --all --format json 2>/dev/null > "$w/fp_${i}_$j.json"
    "$G" diff "$w/fp$i.gpuobs" "$w/fp$j.gpuobs" --min-effect 0.6 --format json 2>/dev/null > "$w/e06_${i}_$j.json"
    "$G" diff "$w/fp$i.gpuobs" "$w/fp$j.gpuobs" --min-impact 0 --format json 2>/dev/null > "$w/i0_${i}_$j.json"
  done; done
  for v in e06 i0; do python3 -c '
import glob, json
n = [len(json.load(open(f))) for f in glob.glob("'"$w"'/'"$v"'_*.json")]
print("'"$v"': pairs", len(n), "with a row called changed", sum(1 for x in n if x), "rows", sum(n))'; done
  python3 -c '
import glob, json
pairs = flagged = rows_flagged = 0; deltas = []; worst = None
for f in sorted(glob.glob("'"$w"'/fp_*.json")):
    rows = json.load(open(f)); pairs += 1
    ch = [r for r in rows if r["verdict"] != "same"]
    flagged += bool(ch); rows_flagged += len(ch)
    for r in ch: print("  changed in", f.split("/")[-1], r["verdict"], r["measure"], r["name"][:60], r["change_pct"], r["effect"])
    for r in rows:
        if r["effect"] is not None and r["unit"].startswith("ns") and r["q_value"] is not None:
            deltas.append((abs(r["effect"]), r["q_value"], r["change_pct"], r["measure"], r["name"][:50]))
deltas.sort(reverse=True)
print(f"identical runs: {pairs} pairs, {flagged} with a row called changed, {rows_flagged} rows; rows per pair {len(rows)}")
print("largest |delta| of timing rows (delta, q, change%, measure, name):")
for d in deltas[:8]: print("  ", d)
n = len(deltas); print("timing rows tested:", n, "with |delta| >= 0.6:", sum(d[0] >= 0.6 for d in deltas), ">= 0.8:", sum(d[0] >= 0.8 for d in deltas))'
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
done
rm -rf "$w"
