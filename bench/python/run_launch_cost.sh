#!/usr/bin/env bash
# Python frames' cost per launch (issue 18): bench/python/launch_cost.py,
# ROUNDS rounds of three modes in rotated order (none: no gpuobs; nopy:
# gpuobs record --python-stacks off; py: gpuobs record, Python frames on),
# medians and the difference py - nopy. As root, from the repo root.
# usage: bench/python/run_launch_cost.sh [PYTHON] [ITERS] [ROUNDS] [DEPTH]
set -euo pipefail
B=${B:-build}
GPUOBS=${GPUOBS:-$([ -x "$B/cli/gpuobs" ] && echo "$B/cli/gpuobs" || echo "$B/gpuobs")}
LIB=${LIB:-$([ -e "$B/tests/libcuda.so.1" ] && echo "$B/tests/libcuda.so.1" || echo "$B/libcuda.so.1")}
PY=${1:-python3}
ITERS=${2:-200000}
ROUNDS=${3:-5}
DEPTH=${4:-10}
T=$(mktemp -d)
run() {
  local cmd=("$PY" bench/python/launch_cost.py "$LIB" --iters "$ITERS" --depth "$DEPTH")
  case $1 in
    none) "${cmd[@]}" ;;
    nopy) "$GPUOBS" record -f --libcuda "$LIB" --python-stacks off -o "$T/c.gpuobs" -- "${cmd[@]}" 2>/dev/null ;;
    py) "$GPUOBS" record -f --libcuda "$LIB" -o "$T/c.gpuobs" -- "${cmd[@]}" 2>/dev/null ;;
  esac
}
modes=(none nopy py)
for r in $(seq 0 $((ROUNDS - 1))); do
  for k in 0 1 2; do
    m=${modes[$(((r + k) % 3))]}
    echo "$m $(run "$m" | tail -1)" >> "$T/results"
  done
done
"$PY" - "$T/results" "$ITERS" "$DEPTH" <<'PYX'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m, js = line.split(" ", 1)
    runs.setdefault(m, []).append(json.loads(js)["ns_per_launch"])
med = {m: statistics.median(v) for m, v in runs.items()}
print(f"launch_cost.py: {sys.argv[2]} launches per run, {sys.argv[3]} Python frames deep, {len(runs['none'])} runs per mode")
for m in ("none", "nopy", "py"):
    print(f"  {m:5s} median {med[m]:8.1f} ns/launch   runs: " + ", ".join(f"{v:.1f}" for v in runs[m]))
print(f"gpuobs without Python frames adds {med['nopy'] - med['none']:.1f} ns/launch; Python frames add "
      f"{med['py'] - med['nopy']:.1f} ns/launch more")
PYX
rm -rf "$T"
