#!/usr/bin/env bash
# Issue 18 on a lent NVIDIA host (as root, from the repo root): Python frames
# in PyTorch launch stacks with default options.
#   1. tiny-op loop and transformer training loop under gpuobs record:
#      share of launches with Python frames, and the script's call sites
#      against torch.profiler(with_stack=True) on a window of the same run
#      (bench/h100/pystacks_check.py);
#   2. cost: the tiny-op loop, ROUNDS rounds of no gpuobs, gpuobs with
#      --python-stacks off and gpuobs (default, Python frames on), medians.
#   3. gpuobs stacks --top 3 of the training loop (for the README).
#   5. (PART=bpfcost) the launch probe's own run time from the kernel's BPF
#      statistics, Python frames off and on, 1, 10 and 40 frames deep.
#   4. (PART=launchcost) the cost per launch without the GPU noise:
#      bench/python/run_launch_cost.sh, ctypes into the fake libcuda, 10
#      Python frames deep, under this host's Python.
set -uo pipefail
B=${B:-.device-build}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
nvidia-smi -L; nproc; "$PY" -c 'import sys, torch; print(sys.version, torch.__version__)'
PART=${PART:-all}
if [ "$PART" = all ] || [ "$PART" = coverage ]; then
  for mode in tiny train; do
    echo "=== $mode"
    "$B/gpuobs" record -f -o /tmp/$mode.gpuobs -- "$PY" bench/h100/torch_pystacks.py $mode /tmp/$mode.json 200 20 2>&1 | tail -2
    "$PY" bench/h100/pystacks_check.py /tmp/$mode.gpuobs /tmp/$mode.json
    "$B/gpuobs" sql "SELECT name, value FROM counters WHERE name LIKE 'python%' AND value > 0" /tmp/$mode.gpuobs
  done
  echo "=== gpuobs stacks --top 3 (train)"
  COLUMNS=200 "$B/gpuobs" stacks --top 3 /tmp/train.gpuobs
fi
if [ "$PART" = all ] || [ "$PART" = launchcost ]; then
  echo "=== cost per launch, ctypes loop into the fake libcuda"
  B=$B bash bench/python/run_launch_cost.sh "$PY" "${LC_ITERS:-300000}" "${ROUNDS:-5}" 10
  B=$B bash bench/python/run_launch_cost.sh "$PY" "${LC_ITERS:-300000}" "${ROUNDS:-5}" 40
fi
if [ "$PART" = all ] || [ "$PART" = bpfcost ]; then
  echo "=== the launch probe's own run time (kernel BPF stats), Python frames off/on"
  B=$B ROUNDS=${BPF_ROUNDS:-1} bash bench/python/bpf_cost.sh "$PY" "${LC_ITERS:-200000}" 1 10 40
fi
if [ "$PART" = all ] || [ "$PART" = cost ]; then
  echo "=== cost: tiny-op loop (${ITERS:-100000} ops), ${ROUNDS:-5} rounds"
  MODES="${MODES:-none nopy gpuobs}" B=$B PATH=$(dirname "$PY"):$PATH bash bench/h100/torch_overhead.sh "${ITERS:-100000}" "${ROUNDS:-5}"
fi
