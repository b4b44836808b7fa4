#!/usr/bin/env bash
# PyTorch eager loop of tiny ops (launch-bound: one cuLaunchKernel per op),
# timed four ways in one run: no probe, empty uprobes on the launch symbols
# (the floor: the uprobe trap alone), gpuobs record with call stacks (the
# default, 64 frames) and without (--stack-depth 0). ROUNDS rounds, the
# order rotated each round; prints every run and the medians, and gpuobs's
# added cost per op as a multiple of the floor's.
# usage: bench/h100/torch_overhead.sh [ITERS] [ROUNDS]   (as root, from the repo root)
set -euo pipefail
B=${B:-.device-build}
ITERS=${1:-200000}
ROUNDS=${2:-5}
T=$(mktemp -d)
run_mode() {
  case $1 in
    none) python3 bench/h100/torch_tiny_ops.py --iters "$ITERS" ;;
    floor) $B/gpuobs_bench floor -- python3 bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    gpuobs) $B/gpuobs record -f -o "$T/t.gpuobs" -- python3 bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    nostack) $B/gpuobs record -f --stack-depth 0 -o "$T/t.gpuobs" -- python3 bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
  esac
}
modes=(none floor gpuobs nostack)
for ((r = 0; r < ROUNDS; r++)); do
  for ((k = 0; k < 4; k++)); do
    m=${modes[$(((r + k) % 4))]}
    printf '%s %s\n' "$m" "$(run_mode "$m")" | tee -a "$T/results"
  done
done
python3 - "$T/results" "$ITERS" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    mode, js = line.split(" ", 1)
    d = json.loads(js)
    assert d["value_ok"], d
    runs.setdefault(mode, []).append(d["us_per_op"])
med = {m: statistics.median(v) for m, v in runs.items()}
print(f"tiny ops: {sys.argv[2]} x.add_ per run, {len(runs['none'])} runs per mode")
for m in ("none", "floor", "gpuobs", "nostack"):
    print(f"  {m:7s} median {med[m]:.3f} us/op   runs: " + ", ".join(f"{v:.3f}" for v in runs[m]))
floor = med["floor"] - med["none"]
added = med["gpuobs"] - med["none"]
nostack = med["nostack"] - med["none"]
print(f"added per op: floor {floor:.3f} us, gpuobs {added:.3f} us = {added / floor:.2f}x the floor; "
      f"without stacks {nostack:.3f} us = {nostack / floor:.2f}x; the stack itself {added - nostack:.3f} us")
PY
rm -rf "$T"
