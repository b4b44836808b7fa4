#!/usr/bin/env bash
# Issue 20 on the lent H100: every documented --stack-depth x --unwind loads
# and records a real CUDA program, and the driver ioctls are decoded the same
# at every depth (the ioctl argument copy changed: its length is clamped in
# the register the helper uses); record without -o; the capture's stack
# options; reports by list; --by-process exports of a PyTorch training run;
# the never-proven markers in the Perfetto export.
# usage: bench/h100/run_issue20.sh [OUTDIR]   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
OUT=${1:-/tmp/gpuobs-issue20}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
mkdir -p "$OUT"
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
head -1 /proc/driver/nvidia/version
Q() { "$B/gpuobs" sql "$1" "$2" --format csv | tail -n +2 | tr '\n' ' '; }

echo "=== 1. cuda_streams --launches 2000 --streams 4, every depth x unwind"
echo "depth,unwind,rc,launches,with_stack,max_depth,ioctls,ioctls_named,rm_allocs_with_class,args_complete_ioctls,capture_options"
for unwind in fp dwarf bpf; do
  for depth in 0 1 8 31 32 64 127; do
    f=$OUT/streams-$unwind-$depth.gpuobs
    "$B/gpuobs" record -f -o "$f" --stack-depth $depth --unwind $unwind -- "$B/cuda_streams" --launches 2000 --streams 4 \
      >/dev/null 2>"$OUT/err.txt"
    rc=$?
    if [ $rc != 0 ]; then echo "$depth,$unwind,rc=$rc,$(tail -3 "$OUT/err.txt" | tr '\n' ' ')"; continue; fi
    echo "$depth,$unwind,$rc,$(Q "SELECT (SELECT count(*) FROM kernel_launches), (SELECT count(*) FROM kernel_launches WHERE stack_id > 0),
      (SELECT coalesce(max(depth), 0) FROM stacks), (SELECT count(*) FROM ioctls), (SELECT count(*) FROM ioctls WHERE request IS NOT NULL),
      (SELECT count(*) FROM ioctls WHERE class_name IS NOT NULL), (SELECT count(*) FROM ioctls WHERE args_complete = 1),
      (SELECT stack_depth || '/' || unwind || '/' || stack_copy_bytes FROM capture)" "$f")"
    grep -c "BEGIN PROG LOAD LOG" "$OUT/err.txt" | sed 's/^/verifier log lines printed: /' | grep -v ': 0$'
  done
done
echo "--- gpu_procs at depth 0 and 64 (fp): the same driver objects"
"$B/gpuobs" report gpu_procs "$OUT/streams-fp-0.gpuobs"
"$B/gpuobs" report gpu_procs "$OUT/streams-fp-64.gpuobs"
echo "--- requests not named at depth 0 (should be none)"
"$B/gpuobs" sql "SELECT driver, printf('0x%08x', cmd) AS cmd, count(*) FROM ioctls WHERE request IS NULL GROUP BY 1, 2" "$OUT/streams-fp-0.gpuobs"

echo "=== 2. record without -o"
BA=$(readlink -f "$B")
(cd "$OUT" && "$BA/gpuobs" record -- "$BA/cuda_streams" --launches 10 --streams 1 2>&1 | head -1)
ls "$OUT" | grep '^gpuobs-cuda_streams-'

echo "=== 3. PyTorch transformer, 100 steps, default options; reports by list; --by-process"
f=$OUT/torch.gpuobs
"$B/gpuobs" record -f -o "$f" -- "$PY" bench/h100/torch_transformer_train.py 100 2>&1 | tail -1
"$B/gpuobs" report capture "$f" | grep -E "stack_depth|unwind|stack_copy|kernel_launches|state"
"$B/gpuobs" report kern_sum,sync_sum "$f" --format csv | cut -c1-160 | head -12
"$B/gpuobs" export folded --by-process "$f" -o "$OUT/torch.folded"
echo "folded lines: $(wc -l < "$OUT/torch.folded"); roots: $(cut -d';' -f1-2 "$OUT/torch.folded" | sort | uniq -c | sort -rn | head -3 | tr '\n' ' ')"
"$B/gpuobs" export pprof --by-process "$f" -o "$OUT/torch.pb.gz" && ls -l "$OUT/torch.pb.gz" | awk '{print "pprof bytes", $5}'
"$B/gpuobs" export perfetto "$f" -o "$OUT/torch.pftrace" && ls -l "$OUT/torch.pftrace" | awk '{print "perfetto bytes", $5}'
"$B/gpuobs" export perfetto "$f" -o "$OUT/torch.pftrace" 2>&1 | head -2   # exists: refused without -f
echo "=== 4. PyTorch, --stack-depth 0: no stacks, same launches"
"$B/gpuobs" record -f -o "$OUT/torch-d0.gpuobs" --stack-depth 0 -- "$PY" bench/h100/torch_transformer_train.py 100 2>&1 | tail -1
Q "SELECT (SELECT sum(launches) FROM launch_agg), (SELECT count(*) FROM stacks), (SELECT stack_depth FROM capture)" "$OUT/torch-d0.gpuobs"; echo
ls -l "$OUT"/torch*.gpuobs | awk '{print $5, $9}'
