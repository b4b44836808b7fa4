#!/usr/bin/env bash
# GPU verification and benchmarks on an NVIDIA host (the lent H100), from the
# self-contained binaries in .device-build/ (scripts/stage-device.sh):
#   1. a real CUDA program: 4 streams, 20,000 launches, recorded; ioctls decoded by device;
#   2. a PyTorch loop recorded: every launch captured, 0 drops;
#   3. nvidia-smi's driver ioctls; gpuobsd capturing a program started after it;
#   4. the fake-library launch loop three ways (CPU cost of the probe here);
#   5. a PyTorch eager loop of tiny ops timed three ways, alternating rounds:
#      no probe, empty uprobes on the launch symbols (the floor), gpuobs record.
# usage: bench/h100/run_all.sh [OUTDIR]   (as root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-${OUT:-/tmp/gpuobs-h100}}
mkdir -p "$OUT"
T=$(mktemp -d)
say() { printf '\n=== %s\n' "$*"; }

say environment
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
uname -r; ldd --version | head -1; nproc
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
ldconfig -p | grep 'libcuda.so.1 ' || true
grep -E 'nvidia|kfd' /proc/devices
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing

say "1. cuda_streams: 4 streams x 20000 launches, recorded"
$B/gpuobs record -o "$OUT/streams.gpuobs" -- $B/cuda_streams --launches 20000 --streams 4
$B/gpuobs report launches "$OUT/streams.gpuobs"
$B/gpuobs report probes "$OUT/streams.gpuobs"
$B/gpuobs report capture "$OUT/streams.gpuobs" | grep -E 'nvidia_driver|kernel_launches|ioctls|dropped|stored|submitted|decode|not_attached'
$B/gpuobs report ioctls "$OUT/streams.gpuobs" | head -25

say "2. PyTorch tiny ops (20000 + 200 warm-up x.add_), recorded"
$B/gpuobs record -o "$OUT/torch.gpuobs" -- python3 bench/h100/torch_tiny_ops.py --iters 20000
$B/gpuobs report launches "$OUT/torch.gpuobs" | head -8
$B/gpuobs report capture "$OUT/torch.gpuobs" | grep -E 'kernel_launches|dropped|stored_launch|submitted_launch'

say "3a. nvidia-smi driver ioctls"
$B/gpuobs record -o "$T/smi.gpuobs" -- nvidia-smi -L
$B/gpuobs report ioctls "$T/smi.gpuobs" | head -12

say "3b. gpuobsd system-wide, cuda_streams started after it"
$B/gpuobsd --db "$OUT/daemon.gpuobs" 2>"$T/daemon.log" &
dpid=$!
for _ in $(seq 100); do grep -q 'capturing to' "$T/daemon.log" && break; sleep 0.1; done
$B/cuda_streams --launches 8000 --streams 4
python3 bench/h100/torch_tiny_ops.py --iters 3000
t0=$(date +%s%N); kill -TERM $dpid; wait $dpid; rc=$?
echo "daemon exit $rc after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
cat "$T/daemon.log"
$B/gpuobs report launches "$OUT/daemon.gpuobs" | head -8

say "4. launch loop on the fake library: none / empty uprobe / gpuobs"
$B/gpuobs_bench launch-loop --lib "$PWD/$B/libcuda.so.1" --calls 200000 --rounds 3

say "5. PyTorch eager tiny ops, 3 rounds x (none, floor, gpuobs), 20000 ops each"
for r in 1 2 3; do
  printf 'round %s none   ' "$r"; python3 bench/h100/torch_tiny_ops.py --iters 20000
  printf 'round %s floor  ' "$r"; $B/gpuobs_bench floor -- python3 bench/h100/torch_tiny_ops.py --iters 20000 2>/dev/null
  printf 'round %s gpuobs ' "$r"; $B/gpuobs record -f -o "$T/t.gpuobs" -- python3 bench/h100/torch_tiny_ops.py --iters 20000 2>/dev/null
done
rm -rf "$T"
