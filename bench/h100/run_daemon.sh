#!/usr/bin/env bash
# GPU check of issue 8 on an NVIDIA host: gpuobsd running first, then three
# concurrent CUDA/PyTorch processes started after it, one of them in a new
# mount namespace with its own copy of libcuda; every launch captured.
# usage: bench/h100/run_daemon.sh   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
S=/tmp/gpuobs-state; ST=/tmp/gpuobs-status.json
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
head -1 /proc/driver/nvidia/version
rm -rf $S; mkdir -p $S
LIBCUDA=$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')
echo "system libcuda: $LIBCUDA"
TORCH='import torch
x = torch.zeros(1024, device="cuda")
torch.cuda.synchronize()
for i in range(3000): x.add_(1)
torch.cuda.synchronize()
assert float(x[0]) == 3000.0
print("torch ok")'

echo "=== reference: the PyTorch script under gpuobs record (its launch count is the truth)"
$B/gpuobs record -f -o /tmp/torch-ref.gpuobs -- python3 -c "$TORCH" 2>&1 | tail -1
REF=$($B/gpuobs sql "SELECT count(*) FROM kernel_launches" /tmp/torch-ref.gpuobs --format csv | tail -1)
echo "torch reference launches: $REF"

echo "=== gpuobsd"
$B/gpuobsd --state-dir $S --status-file $ST --metrics-listen 127.0.0.1:9464 --log-level info 2>/tmp/gpuobsd.err &
D=$!
for i in $(seq 100); do [ -s $ST ] && break; sleep 0.1; done
$B/gpuobs status --status-file $ST 2>&1 || $B/gpuobs status 2>&1 | head -20

echo "=== three processes started after the daemon (+ one in a new mount namespace with a copy of libcuda)"
cp "$LIBCUDA" /tmp/libcuda-copy.so.1
T0=$(date +%s%N)
$B/cuda_streams --launches 20000 --streams 4 > /tmp/w1.txt 2>&1 & P1=$!
$B/stream_pipeline --iterations 200 > /tmp/w2.txt 2>&1 & P2=$!
python3 -c "$TORCH" > /tmp/w3.txt 2>&1 & P3=$!
unshare -m sh -c "mount --bind /tmp/libcuda-copy.so.1 $LIBCUDA && exec $B/cuda_streams --launches 5000 --streams 2" > /tmp/w4.txt 2>&1 & P4=$!
wait $P1 $P2 $P3 $P4
echo "workloads done in $(( ($(date +%s%N) - T0) / 1000000 )) ms"; cat /tmp/w1.txt /tmp/w2.txt /tmp/w3.txt /tmp/w4.txt
sleep 1
echo "=== gpuobs status while running"; $B/gpuobs status --status-file $ST 2>&1 | head -30
echo "=== metrics (per-process launches)"
python3 - <<'PY'
import urllib.request
t = urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=5).read().decode()
for l in t.splitlines():
    if l.startswith(("gpuobs_events_total", "gpuobs_drops_total", "gpuobs_attached_libraries", "gpuobs_gpu_processes", "gpuobs_process_launches_total")):
        print(l)
PY
T1=$(date +%s%N); kill -TERM $D; wait $D; RC=$?; echo "gpuobsd exit $RC after SIGTERM in $(( ($(date +%s%N) - T1) / 1000000 )) ms"
tail -5 /tmp/gpuobsd.err
C=$S/current
echo "=== segment: $(readlink $C)"
Q() { $B/gpuobs sql "$1" $C --format table; }
echo "--- launches per process (truth: cuda_streams 20000, stream_pipeline 600, torch $REF, namespaced cuda_streams 5000)"
Q "SELECT p.tgid, p.comm, p.source, p.container_id IS NOT NULL AS in_container, p.cgroup, count(k.id) AS launches
   FROM processes p LEFT JOIN kernel_launches k ON k.process_id = p.id GROUP BY p.id HAVING launches > 0 ORDER BY launches DESC"
echo "--- libraries attached (one row per file), reason, trigger, latency from trigger to attach"
Q "SELECT library, dev, inode, reason, trigger_tgid, sum(status='attached') AS attached, sum(status='failed') AS failed,
          (min(attached_mono_ns) - min(trigger_mono_ns)) / 1000000.0 AS latency_ms, max(detached_mono_ns) IS NOT NULL AS detached
   FROM probes WHERE library LIKE '%libcuda%' GROUP BY library, dev, inode, reason"
echo "--- GPUs per process"
Q "SELECT tgid, driver, dev_major, dev_minor, ioctls FROM process_gpus ORDER BY tgid"
echo "--- drops and store failures"
Q "SELECT name, value FROM counters WHERE value != 0 AND (name LIKE 'dropped%' OR name LIKE '%failed%' OR name LIKE 'library%')"
