#!/usr/bin/env bash
# GPU check of issue 4 on an NVIDIA host: the driver layer decoded for a CUDA
# program, nvidia-smi and PyTorch; RM allocations paired with their frees per
# process; driver memory per process; the decoded sequence of a CUDA init.
# usage: bench/h100/run_driver_decode.sh   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
head -1 /proc/driver/nvidia/version
grep -E "nvidia|kfd" /proc/devices
Q() { $B/gpuobs sql "$1" "$2" --format table; }

for prog in cuda smi torch; do
  f=/tmp/drv-$prog.gpuobs
  case $prog in
    cuda) cmd="$B/cuda_streams --launches 2000 --streams 4" ;;
    smi) cmd="nvidia-smi" ;;
    torch) cmd="python3 -c 'import torch; x=torch.randn(4096,4096,device=\"cuda\"); y=x@x; torch.cuda.synchronize(); del x,y; torch.cuda.empty_cache(); print(\"ok\")'" ;;
  esac
  echo "=== $prog: $cmd"
  $B/gpuobs record -f -o $f -- sh -c "$cmd" >/dev/null 2>/tmp/err-$prog.txt; tail -1 /tmp/err-$prog.txt
  echo "--- ioctl_sum"; $B/gpuobs report ioctl_sum $f | head -25
  echo "--- gpu_procs"; $B/gpuobs report gpu_procs $f
  echo "--- objects by kind (allocs, frees paired, frees unpaired, allocs never freed by an ioctl)"
  Q "SELECT driver, kind, sum(op='alloc') AS allocs, sum(op='free' AND alloc_id IS NOT NULL) AS frees_paired,
            sum(op='free' AND alloc_id IS NULL) AS frees_unpaired,
            sum(op='alloc' AND NOT EXISTS (SELECT 1 FROM driver_objects f WHERE f.alloc_id = d.id)) AS not_freed
     FROM driver_objects d GROUP BY 1, 2 ORDER BY allocs DESC" $f
  echo "--- requests not named (should be none)"
  Q "SELECT driver, printf('0x%08x', cmd) AS cmd, count(*) FROM ioctls WHERE request IS NULL GROUP BY 1, 2" $f
  echo "--- failed driver calls"
  $B/gpuobs report errors $f | cut -c1-200 | head -12
  echo "--- RM controls not in the name table (top 10)"
  Q "SELECT printf('0x%08x', control) AS control, class_name, count(*) AS n FROM ioctls
     WHERE control IS NOT NULL AND control_name IS NULL GROUP BY control ORDER BY n DESC LIMIT 10" $f
  echo "--- counters"
  Q "SELECT name, value FROM counters WHERE value != 0 AND (name LIKE 'dropped%' OR name LIKE 'stored_ioctl' OR name LIKE 'submitted_ioctl')" $f
done
f=/tmp/drv-cuda.gpuobs
echo "=== cuda: the decoded sequence, first 60 driver calls"
Q "SELECT i.id, i.driver, i.request, coalesce(i.class_name, '') AS class,
          CASE WHEN i.control IS NULL THEN '' ELSE coalesce(i.control_name, printf('0x%08x', i.control)) END AS control,
          i.status_name, json_extract(i.args, '$.size') AS size, i.latency_ns
   FROM ioctls i ORDER BY i.ts_mono_ns LIMIT 60" $f
echo "=== cuda: memory objects with sizes (class, count, bytes)"
Q "SELECT class_name, count(*) AS n, sum(bytes) AS bytes, min(bytes), max(bytes) FROM driver_objects WHERE op='alloc' AND kind='memory' GROUP BY 1" $f
echo "=== cuda: UVM statuses"
Q "SELECT request, status_name, count(*) FROM ioctls WHERE driver = 'nvidia-uvm' GROUP BY 1, 2 ORDER BY 3 DESC" $f
echo "=== smi: every object with its free (alloc/free pairs per process)"
Q "SELECT a.id, a.kind, a.class_name, printf('0x%08x', a.handle) AS handle, f.id AS freed_by FROM driver_objects a
   LEFT JOIN driver_objects f ON f.alloc_id = a.id WHERE a.op = 'alloc' ORDER BY a.id" /tmp/drv-smi.gpuobs
echo "=== torch: driver memory timeline (device memory, live bytes)"
Q "SELECT t.ts_mono_ns - (SELECT start_mono_ns FROM capture) AS t_ns, op, class_name, bytes, live_bytes FROM driver_memory_timeline t" /tmp/drv-torch.gpuobs | tail -8
echo "=== torch: driver_calls top 15"
$B/gpuobs report driver_calls /tmp/drv-torch.gpuobs | head -17
echo "=== cuda: API launches still captured"
$B/gpuobs report kern_sum $f | head -5
