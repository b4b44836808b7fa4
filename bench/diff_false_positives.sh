#!/usr/bin/env bash
# gpuobs diff's false-positive rate: RUNS recordings of one unchanged
# workload (tests/workloads/step_workload.cpp on the fake libcuda), every
# pair diffed at the defaults; prints the rows called changed per pair and
# the largest |Cliff's delta| any timing row reached, next to the same
# workload with each of its three known changes (which must be found).
# usage: bench/diff_false_positives.sh [BUILD_DIR] [RUNS]   (root: BPF)
set -euo pipefail
B=${1:-build}
RUNS=${2:-10}
B=$(cd "$B" && pwd)
FAKE=$B/tests/libcuda.so.1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rec() {  # rec OUT DELAY_US [workload args]
  FAKE_CUDA_DELAY_US=cuMemcpyHtoD_v2=$2 "$B/cli/gpuobs" record -o "$1" --libcuda "$FAKE" -- \
    "$B/tests/step_workload" --lib "$FAKE" --steps 300 "${@:3}" >/dev/null 2>&1
}
for i in $(seq 1 "$RUNS"); do rec "$dir/run$i.gpuobs" 200; done
pairs=0 flagged_pairs=0 flagged_rows=0 max_delta=0
for i in $(seq 1 "$RUNS"); do
  for j in $(seq $((i + 1)) "$RUNS"); do
    pairs=$((pairs + 1))
    out=$("$B/cli/gpuobs" diff "$dir/run$i.gpuobs" "$dir/run$j.gpuobs" --all --format json 2>/dev/null)
    read -r rows delta < <(python3 -c '
import json, sys
rows = json.load(sys.stdin)
changed = sum(1 for r in rows if r["verdict"] != "same")
timing = [abs(r["effect"]) for r in rows if r["effect"] is not None and r["unit"].startswith("ns")]
print(changed, max(timing or [0]))' <<<"$out")
    flagged_rows=$((flagged_rows + rows))
    ((rows > 0)) && flagged_pairs=$((flagged_pairs + 1))
    max_delta=$(python3 -c "print(max($max_delta, $delta))")
  done
done
echo "unchanged: $RUNS runs, $pairs pairs diffed: $flagged_pairs pairs with a row called changed, $flagged_rows rows in all; largest |delta| of a timing row: $max_delta"
rec "$dir/extra.gpuobs" 200 --extra-kernel 1
rec "$dir/slow.gpuobs" 600
rec "$dir/idle.gpuobs" 200 --idle-ms 2
for c in extra slow idle; do
  echo "== run1 vs $c =="
  "$B/cli/gpuobs" diff "$dir/run1.gpuobs" "$dir/$c.gpuobs" --format csv | cut -d, -f1-9,18
done
