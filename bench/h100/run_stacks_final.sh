#!/usr/bin/env bash
# Final GPU check of the stack work on one build: each unwinder on PyTorch
# (launches reaching Python, depth, drops), and the 4-stream CUDA program.
# usage: bench/h100/run_stacks_final.sh   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
for mode in fp dwarf; do
  echo "=== --unwind $mode: PyTorch tiny ops 50,000 + training loop"
  $B/gpuobs record -f -o /tmp/f.gpuobs --unwind $mode -- sh -c "python3 bench/h100/torch_tiny_ops.py --iters 50000 >/dev/null; python3 bench/h100/torch_train_step.py" 2>&1 | tail -1
  python3 bench/h100/stack_stats.py /tmp/f.gpuobs | grep -E "GPU calls|depth|ending|reach|dropped"
done
echo "=== --unwind bpf (warm-up process first)"
bash bench/h100/run_bpf_warm.sh
echo "=== 4-stream CUDA program, default stacks"
$B/gpuobs record -f -o /tmp/s.gpuobs -- $B/cuda_streams --launches 20000 --streams 4 2>&1 | tail -1
$B/gpuobs stacks /tmp/s.gpuobs --top 1
