#!/usr/bin/env bash
# Issue 19, part 1 on a lent NVIDIA host (as root, from the repo root):
#   1. the sampler's own CPU cost (bench/metrics_bench.cpp): 10 Hz, the
#      host's GPU asked 8 times per tick (8 GPUs' worth) and once;
#   2. torch_busy.py (matmul / idle / stream phases) under gpuobs record
#      with nvidia-smi sampling at 100 ms in the same run: per-phase means
#      compared (bench/h100/metrics_check.py), gpu_sum, gpu_procs;
#   3. the 4-stream example recorded: gpu_sum;
#   4. gpuobsd with the Prometheus endpoint: the GPU gauges;
#   5. the exports: the GPU's counter tracks in the Chrome JSON.
set -uo pipefail
B=${B:-.device-build}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
nvidia-smi -L; nproc
PART=${PART:-all}
if [ "$PART" = all ] || [ "$PART" = bench ]; then
  echo "=== 1. sampler cost (a CUDA process holds a context meanwhile: NVML lists one compute process)"
  "$PY" -c 'import torch, time; torch.zeros(1, device="cuda"); time.sleep(600)' &
  holder=$!
  sleep 8
  # ';'-separated configurations; "default": the sampler's own periods.
  IFS=';' read -ra cfgs <<< "${BENCH_CFGS:---gpm-period-ms 0 --proc-period-ms 0;default}"
  for cfg in "${cfgs[@]}"; do
    [ "$cfg" = default ] && cfg=
    "$B/metrics_bench" --seconds "${BENCH_S:-20}" --hz 10 --replicas 8 $cfg
  done
  "$B/metrics_bench" --seconds "${BENCH_S:-20}" --hz 10 --replicas 1
  kill $holder
fi
if [ "$PART" = all ] || [ "$PART" = busy ]; then
  echo "=== 2. torch_busy.py under gpuobs record, nvidia-smi alongside"
  nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw,clocks.sm,memory.used --format=csv,noheader,nounits \
    -lms 100 > /tmp/smi.csv &
  smi=$!
  "$B/gpuobs" record -f --detail-interval-ms 100 -o /tmp/busy.gpuobs -- "$PY" bench/h100/torch_busy.py /tmp/busy.json "${PHASE_S:-4}" 2>&1 | tail -3
  kill $smi; wait $smi 2>/dev/null
  "$PY" bench/h100/metrics_check.py /tmp/busy.gpuobs /tmp/smi.csv /tmp/busy.json
  COLUMNS=200 "$B/gpuobs" report gpu_sum /tmp/busy.gpuobs
  COLUMNS=250 "$B/gpuobs" report gpu_procs /tmp/busy.gpuobs
  "$B/gpuobs" sql "SELECT * FROM gpus" /tmp/busy.gpuobs
  "$B/gpuobs" sql "SELECT * FROM gpu_sources" /tmp/busy.gpuobs
  "$B/gpuobs" sql "SELECT name, value FROM counters WHERE name LIKE 'gpu_%'" /tmp/busy.gpuobs
  "$B/gpuobs" sql "SELECT count(*) AS rows, (SELECT count(*) FROM gpu_process_rows) AS process_rows FROM gpu_sample_rows" /tmp/busy.gpuobs
  ls -l /tmp/busy.gpuobs
fi
if [ "$PART" = all ] || [ "$PART" = streams ]; then
  echo "=== 3. cuda_streams recorded"
  "$B/gpuobs" record -f -o /tmp/streams.gpuobs -- "$B/cuda_streams" --launches 20000 --streams 4 2>&1 | tail -2
  COLUMNS=200 "$B/gpuobs" report gpu_sum /tmp/streams.gpuobs | head -20
fi
if [ "$PART" = all ] || [ "$PART" = daemon ]; then
  echo "=== 4. gpuobsd's Prometheus GPU gauges"
  "$B/gpuobsd" --config /dev/null --state-dir /tmp/gd --status-file /tmp/gd.json --metrics-listen 127.0.0.1:9464 \
    > /tmp/gd.log 2>&1 &
  d=$!
  sleep 4
  curl -s http://127.0.0.1:9464/metrics | grep -E '^gpuobs_gpu' | head -40
  "$B/gpuobs" status --status-file /tmp/gd.json 2>&1 | grep -A3 "GPU metrics" || true
  kill -TERM $d; wait $d
fi
if [ "$PART" = all ] || [ "$PART" = export ]; then
  echo "=== 5. export"
  "$B/gpuobs" export chrome -f -o /tmp/busy.json.trace /tmp/busy.gpuobs && "$PY" -c '
import json, collections
ev = json.load(open("/tmp/busy.json.trace"))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
c = collections.Counter((names.get(e["pid"], e["pid"]), e["name"]) for e in ev if e.get("ph") == "C" and e["pid"] >= 1 << 29)
for k, n in sorted(c.items()): print(k, n)'
fi
if [ "$PART" = all ] || [ "$PART" = gputime ]; then
  echo "=== 6. --gpu-time: cuda_streams (4 streams) recorded with CUPTI injected"
  "$B/gpuobs" record -f --gpu-time -o /tmp/gt.gpuobs -- "$B/cuda_streams" --launches 2000 --streams 4 2>&1 | grep '^gpuobs:'
  "$B/gpuobs" sql "SELECT name, value FROM counters WHERE name LIKE 'gpu_time%'" /tmp/gt.gpuobs
  "$B/gpuobs" sql "SELECT call_table, count(*) AS n, min(duration_ns), avg(duration_ns), max(duration_ns), joined_by FROM gpu_times GROUP BY 1, joined_by" /tmp/gt.gpuobs
  COLUMNS=200 "$B/gpuobs" report kern_sum /tmp/gt.gpuobs
  COLUMNS=200 "$B/gpuobs" report copy_sum /tmp/gt.gpuobs
  "$B/gpuobs" replay --check /tmp/gt.gpuobs 2>&1 | tail -8
fi
if [ "$PART" = all ] || [ "$PART" = gputime ] || [ "$PART" = gputime-torch ]; then
  echo "=== 7. --gpu-time: PyTorch (bench/h100/torch_gputime.py), and torch.profiler's CUPTI durations in a separate run"
  "$B/gpuobs" record -f --gpu-time -o /tmp/tgt.gpuobs -- "$PY" bench/h100/torch_gputime.py none 2>&1 | grep '^gpuobs:'
  "$PY" bench/h100/torch_gputime.py profile /tmp/prof.json 2>&1 | tail -2
  "$PY" bench/h100/gputime_check.py /tmp/tgt.gpuobs /tmp/prof.json
  "$B/gpuobs" sql "SELECT name, value FROM counters WHERE name LIKE 'gpu_time%'" /tmp/tgt.gpuobs
  "$B/gpuobs" replay --check /tmp/tgt.gpuobs 2>&1 | tail -8
fi
if [ "$PART" = all ] || [ "$PART" = gputime ]; then
  echo "=== 8. --gpu-time cost on the tiny-op loop (5 runs each, medians): none, gpuobs, gpuobs --gpu-time, torch.profiler"
  for mode in none gpuobs gputime profiler; do
    for i in 1 2 3 4 5; do
      case $mode in
        none) "$PY" bench/h100/torch_gputime.py tiny ;;
        gpuobs) "$B/gpuobs" record -f -o /tmp/c.gpuobs -- "$PY" bench/h100/torch_gputime.py tiny 2>/dev/null ;;
        gputime) "$B/gpuobs" record -f --gpu-time -o /tmp/c.gpuobs -- "$PY" bench/h100/torch_gputime.py tiny 2>/dev/null ;;
        profiler) "$PY" bench/h100/torch_gputime.py tiny-profiled 2>/dev/null ;;
      esac
    done | awk '/us_per_op/ {print $2}' | sort -n |
      awk -v m=$mode '{v[NR]=$1} END {printf "%-9s us/op runs:", m; for (i=1;i<=NR;i++) printf " %s", v[i]; printf "  median %s\n", v[int((NR+1)/2)]}'
  done
fi
if [ "$PART" = all ] || [ "$PART" = train ]; then
  echo "=== 9. --gpu-time on a transformer training loop (bench/h100/torch_train.py): join, replay check, kern_sum"
  "$B/gpuobs" record -f --gpu-time -o /tmp/train.gpuobs -- "$PY" bench/h100/torch_train.py "${TRAIN_STEPS:-50}" 2>&1 | grep -E '^gpuobs:|trained'
  "$B/gpuobs" sql "SELECT name, value FROM counters WHERE name LIKE 'gpu_time%' AND value != 0" /tmp/train.gpuobs
  "$B/gpuobs" replay --check /tmp/train.gpuobs 2>&1 | tail -12
  COLUMNS=220 "$B/gpuobs" report kern_sum /tmp/train.gpuobs | head -8
  COLUMNS=200 "$B/gpuobs" report gpu_sum /tmp/train.gpuobs | grep -E 'sm_active|tensor_active|gpu_util|power|throttle'
  "$B/gpuobs" export perfetto -f -o /tmp/train.pftrace /tmp/train.gpuobs && ls -l /tmp/train.pftrace
fi
if [ "$PART" = all ] || [ "$PART" = graph ]; then
  echo "=== 10. --gpu-time on CUDA graph replays (bench/h100/torch_graph.py)"
  "$B/gpuobs" record -f --gpu-time -o /tmp/graph.gpuobs -- "$PY" bench/h100/torch_graph.py 20 2>&1 | grep -E '^gpuobs: GPU times|replayed'
  "$B/gpuobs" sql "SELECT call_table, count(*) AS n, sum(activities) AS ops, min(duration_ns), max(duration_ns) FROM gpu_times GROUP BY 1" /tmp/graph.gpuobs
  "$B/gpuobs" sql "SELECT count(*) AS graph_launches FROM stream_ops WHERE op = 'graph_launch'" /tmp/graph.gpuobs
  "$B/gpuobs" sql "SELECT name, value FROM counters WHERE name LIKE 'gpu_time%' AND value != 0" /tmp/graph.gpuobs
  "$B/gpuobs" replay --check /tmp/graph.gpuobs 2>&1 | tail -3
fi
