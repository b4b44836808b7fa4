#!/usr/bin/env bash
# Issue 15, "every GPU process, wherever its library is", on the lent H100:
# its libcuda.so.1 is in /usr/local/nvidia/lib64, reached through
# LD_LIBRARY_PATH and absent from the linker cache. System discovery is
# switched off (GPUOBS_LIBCUDA_SEARCH_PATH names an empty directory), so
# nothing is attached before a process maps its library:
#   1. gpuobs record, no --libcuda: cuda_streams (4 streams) -> launches equal the truth;
#   2. record, the command sets its own LD_LIBRARY_PATH (not pre-resolvable): found at mmap;
#   3. gpuobsd, then short-lived cuda_streams runs (LD_LIBRARY_PATH, and a copy of
#      libcuda in /tmp loaded by path): launches per process, mapping -> attached latency.
# usage: bench/h100/run_issue15_libs.sh [OUTDIR]   (as root; B= the staged binaries)
set -uo pipefail
B=${B:-.device-build-libs}
OUT=${1:-${OUT:-/tmp/gpuobs-issue15}}
mkdir -p "$OUT"
EMPTY=$(mktemp -d)
say() { printf '\n=== %s\n' "$*"; }
sql() { "$B/gpuobs" sql --format csv "$1" "$2"; }
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64 GPUOBS_LIBCUDA_SEARCH_PATH=$EMPTY GPUOBS_LIBHIP_SEARCH_PATH=$EMPTY

say environment
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
uname -r
ls -l /usr/local/nvidia/lib64/libcuda.so* | head -3
echo "libcuda.so.1 in the ld.so cache: $(ldconfig -p | grep -c 'libcuda.so.1 ')"

rm -f "$OUT"/rec*.gpuobs*
say "1. gpuobs record -- cuda_streams --launches 20000 --streams 4 (LD_LIBRARY_PATH, no --libcuda)"
"$B/gpuobs" record -o "$OUT/rec.gpuobs" -- "$B/cuda_streams" --launches 20000 --streams 4
"$B/gpuobs" report launches "$OUT/rec.gpuobs" | head -8
sql "SELECT count(*) AS launches FROM kernel_launches" "$OUT/rec.gpuobs"
sql "SELECT library, reason, count(*) AS probes FROM probes WHERE status = 'attached' GROUP BY 1, 2" "$OUT/rec.gpuobs"

say "2. record, LD_LIBRARY_PATH set by the command itself (found when mapped)"
env -u LD_LIBRARY_PATH "$B/gpuobs" record -o "$OUT/rec2.gpuobs" -- sh -c \
  "LD_LIBRARY_PATH=/usr/local/nvidia/lib64 $B/cuda_streams --launches 5000 --streams 4"
sql "SELECT count(*) AS launches FROM kernel_launches" "$OUT/rec2.gpuobs"
sql "SELECT reason, (attached_mono_ns - trigger_mono_ns) / 1e6 AS map_to_attached_ms,
     ((SELECT min(ts_mono_ns) FROM kernel_launches) - attached_mono_ns) / 1e6 AS attached_to_first_launch_ms
     FROM probes WHERE symbol = 'cuLaunchKernel'" "$OUT/rec2.gpuobs"

say "3. gpuobsd, short-lived processes"
rm -f "$OUT/d.gpuobs"*
"$B/gpuobsd" --db "$OUT/d.gpuobs" --no-gpu-devices --library-rescan 60s --status-file "$OUT/status.json" \
  2>"$OUT/gpuobsd.log" &
D=$!
for _ in $(seq 100); do grep -q "capturing to" "$OUT/gpuobsd.log" && break; sleep 0.1; done
mkdir -p /tmp/i15copy && cp /usr/local/nvidia/lib64/libcuda.so.1 /tmp/i15copy/libcuda.so.1
timed() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo "$* lived $(( (e - s) / 1000000 )) ms"; }
for i in 1 2 3; do
  timed "$B/cuda_streams" --launches 10 --streams 4
  timed "$B/cuda_streams" --lib /tmp/i15copy/libcuda.so.1 --launches 10 --streams 4
done
sleep 1
kill -TERM $D; wait $D; echo "gpuobsd exit $?"
sql "SELECT p.tgid, p.exe, count(k.tgid) AS launches FROM processes p LEFT JOIN kernel_launches k ON k.tgid = p.tgid
     WHERE p.exe LIKE '%cuda_streams' GROUP BY p.tgid ORDER BY p.tgid" "$OUT/d.gpuobs"
sql "SELECT library, reason, trigger_tgid, (attached_mono_ns - trigger_mono_ns) / 1e6 AS map_to_attached_ms,
     ((SELECT min(ts_mono_ns) FROM kernel_launches k WHERE k.tgid = p.trigger_tgid) - attached_mono_ns) / 1e6
       AS attached_to_first_launch_ms, detached_mono_ns IS NOT NULL AS released
     FROM probes p WHERE symbol = 'cuLaunchKernel' ORDER BY attached_mono_ns" "$OUT/d.gpuobs"
sql "SELECT name, value FROM counters WHERE name LIKE 'library_%'" "$OUT/d.gpuobs"
grep -E "attached|detached|not attaching" "$OUT/gpuobsd.log" | head -20
rm -rf /tmp/i15copy "$EMPTY"
