#!/usr/bin/env bash
# PyTorch eager loop of tiny ops (launch-bound: one cuLaunchKernel per op),
# timed four ways in one run: no probe, empty uprobes on the launch symbols
# (the floor: the uprobe trap alone), gpuobs record with frame-pointer
# stacks (the default, 64 frames), without stacks (--stack-depth 0) and with
# DWARF unwinding (--unwind dwarf); MODES picks which (default: all but dwarf). ROUNDS rounds, the
# order rotated each round; prints every run and the medians, and gpuobs's
# added cost per op as a multiple of the floor's.
# usage: bench/h100/torch_overhead.sh [ITERS] [ROUNDS]   (as root, from the repo root)
set -euo pipefail
B=${B:-.device-build}
ITERS=${1:-200000}
ROUNDS=${2:-5}
T=$(mktemp -d)
# PIN=CPU runs the Python loop on that CPU only (less noise from migrations;
# gpuobs's reader runs elsewhere).
P="${PIN:+taskset -c $PIN }python3"
run_mode() {
  case $1 in
    none) $P bench/h100/torch_tiny_ops.py --iters "$ITERS" ;;
    floor) $B/gpuobs_bench floor -- $P bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    gpuobs) $B/gpuobs record -f -o "$T/t.gpuobs" -- $P bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    nopy) $B/gpuobs record -f --python-stacks off -o "$T/t.gpuobs" -- $P bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    nostack) $B/gpuobs record -f --stack-depth 0 -o "$T/t.gpuobs" -- $P bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    dwarf32) $B/gpuobs record -f --unwind dwarf --stack-copy 32768 --ring-mb 256 -o "$T/t.gpuobs" -- $P bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    dwarf) $B/gpuobs record -f --unwind dwarf --ring-mb 256 -o "$T/t.gpuobs" -- $P bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null
           python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); print('dwarf capture:', dict(d.execute(\"SELECT name, value FROM counters WHERE name IN ('stored_launch','dropped_launch_ringbuf_full','dwarf_copy_end')\").fetchall()))" "$T/t.gpuobs" >&2 ;;
  esac
}
read -r -a modes <<< "${MODES:-none floor gpuobs nostack}"
n=${#modes[@]}
for ((r = 0; r < ROUNDS; r++)); do
  for ((k = 0; k < n; k++)); do
    m=${modes[$(((r + k) % n))]}
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
for m in runs:
    print(f"  {m:7s} median {med[m]:.3f} us/op   runs: " + ", ".join(f"{v:.3f}" for v in runs[m]))
floor = med["floor"] - med["none"] if "floor" in med else None
for m in runs:
    if m in ("none", "floor"):
        continue
    added = med[m] - med["none"]
    vs = f" = {added / floor:.2f}x the floor ({floor:.3f} us)" if floor else ""
    print(f"added per op by {m}: {added:.3f} us{vs}")
# Python frames (issue 18): what --python-stacks on adds over off.
if "nopy" in med and "gpuobs" in med:
    print(f"added per op by Python frames (gpuobs - nopy): {med['gpuobs'] - med['nopy']:.3f} us")
PY
rm -rf "$T"
