#!/usr/bin/env bash
# Final GPU check of a build: every family made vs recorded, the PyTorch
# training loop (names, families), the 4-stream example, and the probe costs.
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-h100}}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
echo "=== all families"
$B/gpuobs record -o "$OUT/final-families.gpuobs" -- $B/all_families --iterations 500 --truth "$OUT/final-families.json"
python3 bench/h100/check_families.py "$OUT/final-families.gpuobs" "$OUT/final-families.json"; echo "check exit $?"
echo "=== PyTorch training loop"
$B/gpuobs record -o "$OUT/final-train.gpuobs" -- python3 bench/h100/torch_train_step.py
python3 bench/h100/check_families.py "$OUT/final-train.gpuobs"; echo "check exit $?"
echo "=== 4 streams x 20000 launches"
$B/gpuobs record -o /tmp/s.gpuobs -- $B/cuda_streams --launches 20000 --streams 4
$B/gpuobs report launches /tmp/s.gpuobs
echo "=== gpuobsd: two programs started after it"
$B/gpuobsd --db "$OUT/final-daemon.gpuobs" 2>/tmp/d.log & d=$!
for _ in $(seq 100); do grep -q 'capturing to' /tmp/d.log && break; sleep 0.1; done
$B/cuda_streams --launches 8000 --streams 4 & c=$!
python3 bench/h100/torch_tiny_ops.py --iters 3000
wait $c
t0=$(date +%s%N); kill -TERM $d; wait $d; echo "daemon exit $? after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
$B/gpuobs report launches "$OUT/final-daemon.gpuobs" | head -6
echo "=== probe costs"
$B/gpuobs_bench api-loop --lib "$PWD/$B/libcuda.so.1" --calls 300000 --rounds 5
bash bench/h100/torch_overhead.sh 200000 5 | tail -5
