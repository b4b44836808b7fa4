#!/usr/bin/env bash
# --unwind dwarf on a GPU host: how deep PyTorch stacks get (do they reach the
# Python interpreter?) for several stack-copy sizes, against frame pointers,
# and what it costs per op.
# usage: bench/h100/run_dwarf.sh [OUT]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-h100}}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
for copy in 8192 16384 32768; do
  echo "=== PyTorch training loop, --unwind dwarf --stack-copy $copy"
  $B/gpuobs record -o "$OUT/dwarf-train-$copy.gpuobs" --unwind dwarf --stack-copy $copy -- python3 bench/h100/torch_train_step.py 2>&1 | tail -1
  python3 bench/h100/stack_stats.py "$OUT/dwarf-train-$copy.gpuobs"
  sqlite3 "$OUT/dwarf-train-$copy.gpuobs" "SELECT name, value FROM counters WHERE name LIKE 'dwarf%'" 2>/dev/null ||
    python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT group_concat(name || '=' || value, ' ') FROM counters WHERE name LIKE 'dwarf%'\").fetchone()[0])" "$OUT/dwarf-train-$copy.gpuobs"
done
$B/gpuobs stacks "$OUT/dwarf-train-16384.gpuobs" --top 2
$B/gpuobs export folded "$OUT/dwarf-train-16384.gpuobs" -o "$OUT/dwarf-train.folded"
rm -f "$OUT/dwarf-train-8192.gpuobs" "$OUT/dwarf-train-32768.gpuobs"
echo "=== PyTorch tiny ops, frame pointers vs dwarf: depth"
$B/gpuobs record -o /tmp/fp.gpuobs -- python3 bench/h100/torch_tiny_ops.py --iters 20000 2>&1 | tail -1
python3 bench/h100/stack_stats.py /tmp/fp.gpuobs | grep -E "depth|reach|ending"
$B/gpuobs record -o /tmp/dw.gpuobs --unwind dwarf -- python3 bench/h100/torch_tiny_ops.py --iters 20000 2>&1 | tail -1
python3 bench/h100/stack_stats.py /tmp/dw.gpuobs | grep -vE "rows,"
echo "=== cost per op: none, floor, fp stacks, no stacks, dwarf"
MODES="none floor gpuobs nostack dwarf" bash bench/h100/torch_overhead.sh 200000 3 2>&1 | tail -12
