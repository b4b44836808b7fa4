#!/usr/bin/env bash
# Issue 17 on the lent H100: writer_bench (the writer alone, tmpfs and disk)
# and pipeline_bench (8 x 187,500 launches/s for 10 s; 1 process x 3 M).
# usage: bench/h100/run_issue17_writer.sh   (as root, from the repo root)
set -u
B=.device-build
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
nproc; lscpu | grep "Model name"
echo "=== writer_bench 1 proc"; $B/writer_bench --procs 1 --launches 3000000 --out /dev/shm/wb.gpuobs | grep -v "^\["
echo "=== writer_bench 8 procs"; $B/writer_bench --procs 8 --launches 3000000 --out /dev/shm/wb.gpuobs | grep -v "^\["
echo "=== writer_bench 8 procs on disk"; $B/writer_bench --procs 8 --launches 3000000 --out /tmp/wb.gpuobs | grep -v "^\["
echo "=== pipeline 8 x 187500/s 10 s"; $B/pipeline_bench --procs 8 --seconds 10 --rate 187500 2>&1 | tail -16
echo "=== pipeline 1 x 3M"; $B/pipeline_bench --procs 1 --launches 3000000 --no-limit 2>&1 | tail -14
