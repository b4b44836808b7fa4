#!/usr/bin/env bash
# Issue 17, fourth round on the lent H100: records sized to what they hold
# (ABI 6, bpf_ringbuf_output from scratch slots) against the previous build
# (gpuobsd_old in $B: the tree of 09712dd, records reserved at the full
# depth), in alternation, both at the 64 MiB default ring.
# usage: bench/h100/run_issue17_round4.sh   (as root, from the repo root)
# A pipeline run takes about 2.5 minutes on the H100 host (setup, 10 s of
# launches, teardown): 3 runs fit one 10-minute call.
set -uo pipefail
B=${B:-.device-build}
nproc; lscpu | grep -E "Model name" | head -1
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
pb() { "$B/pipeline_bench" "$@" --no-limit 2>&1 | grep -E "^(offered|stored|drops|ring|cpu|complete|on disk)" | sed -E 's/api_entry_stale.*dropped_launch_ringbuf_full=([0-9]+).*dropped_store_backlog=([0-9]+).*/ring_full=\1 store_backlog=\2/'; }
for b in ${BUILDS:-gpuobsd gpuobsd_old gpuobsd}; do
  echo "=== 8 x 187500/s 10 s, $b, default ring (64 MiB) [$(date +%T)]"
  pb --procs 8 --seconds 10 --rate 187500 --gpuobsd "$B/$b"
done
