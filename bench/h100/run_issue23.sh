#!/usr/bin/env bash
# Issue 23 on a lent NVIDIA host (as root, from the repo root): captures
# whose GPU-side tables are real, brought back to be shipped into
# ClickHouse on the dev VM (the lent host reaches no package registry, and
# clickhouse-server is too big to carry), where bench/fleet_h100_check.sh
# compares every fleet report with the local one:
#   1. PyTorch transformer training (STEPS steps) under gpuobs record with
#      --gpu-time (CUPTI's kernel, copy and memset times) and the NVML
#      sampler at 10 Hz: launches, API calls, allocations, stream
#      operations, copies, syncs, the driver's ioctls and objects, GPU
#      metrics, per-process GPU samples, GPU times;
#   2. the 4-stream example the same way (a C program: frees and leaks);
#   3. (PART=ddp, 2 GPUs) torchrun DDP on 2 GPUs, rank 1 200 ms late before
#      every 10th step, under gpuobs record: NCCL calls of both ranks for
#      nccl_sum and nccl_ranks on ClickHouse.
# PART=all (1 and 2) or ddp. Writes the captures and the record logs to $OUT.
set -uo pipefail
B=${B:-.device-build}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
OUT=${OUT:-/tmp/issue23}
STEPS=${STEPS:-60}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
PART=${PART:-all}
mkdir -p "$OUT"
nvidia-smi -L; nproc
if [ "$PART" = ddp ]; then
  TORCHRUN=${TORCHRUN:-$(dirname "$PY")/torchrun}
  echo "=== 3. torchrun DDP on 2 GPUs, 60 steps, rank 1 late before every 10th"
  "$B/gpuobs" record -f -o "$OUT/ddp.gpuobs" -- env LATE_RANK=1 LATE_EVERY=10 LATE_MS=200 \
    "$TORCHRUN" --nproc-per-node=2 --master-port 29551 bench/h100/torch_ddp.py 60 > "$OUT/ddp.record.log" 2>&1
  echo "rc $?"; grep -v "^W" "$OUT/ddp.record.log" | tail -4
  "$B/gpuobs" report nccl_ranks "$OUT/ddp.gpuobs" | head -8
  ls -l "$OUT/ddp.gpuobs"
  exit 0
fi
echo "=== 1. PyTorch training, $STEPS steps, --gpu-time, metrics at 10 Hz"
"$B/gpuobs" record -f --gpu-time --metrics-hz 10 -o "$OUT/train.gpuobs" -- \
  "$PY" bench/h100/torch_transformer_train.py "$STEPS" > "$OUT/train.record.log" 2>&1
echo "rc $?"; tail -5 "$OUT/train.record.log"
echo "=== 2. cuda_streams, --gpu-time"
"$B/gpuobs" record -f --gpu-time --metrics-hz 10 -o "$OUT/streams.gpuobs" -- \
  "$B/cuda_streams" --launches 4000 --streams 4 > "$OUT/streams.record.log" 2>&1
echo "rc $?"; tail -3 "$OUT/streams.record.log"
for c in train streams; do
  echo "--- $c"
  "$B/gpuobs" sql "SELECT (SELECT count(*) FROM kernel_launches) AS launches, (SELECT count(*) FROM gpu_times) AS gpu_times,
    (SELECT count(*) FROM gpu_metrics) AS metrics, (SELECT count(*) FROM gpu_process_metrics) AS proc_metrics,
    (SELECT count(*) FROM ioctls) AS ioctls, (SELECT count(*) FROM driver_objects) AS driver_objects,
    (SELECT count(*) FROM memory_ops) AS memory_ops, (SELECT count(*) FROM stream_ops) AS stream_ops" "$OUT/$c.gpuobs"
  ls -l "$OUT/$c.gpuobs"
done
