#!/usr/bin/env bash
# Ships captures into a throwaway clickhouse-server (bench/lib_clickhouse.sh)
# and runs every report gpuobs runs on ClickHouse, once per capture (its
# host) and locally on the capture, then compares them column for column:
# for captures made elsewhere, e.g. on a GPU host by bench/h100/run_issue23.sh
# (real NVML metrics, CUPTI GPU times, driver ioctls), which the tests on
# this GPU-less machine cannot make. Each capture must name its own host
# (`capture.host`); a copy can be renamed with
#   sqlite3 COPY "UPDATE capture SET host = 'other'".
# Prints per report and capture "same (N rows)" or the differing lines;
# Compared as CSV text (types, rounding and column order included); leaks
# and errors without stack_id and stack (shipped stacks are text; Python
# frames carry their file:line there).
# Exits 1 when any differs.
# usage: bench/fleet_compare.sh [BUILD_DIR] CAPTURE...   (from the repo root)
set -euo pipefail
B=build
if [ $# -gt 0 ] && [ -d "$1" ]; then B=$1; shift; fi
B=$(cd "$B" && pwd)
GPUOBS=$B/cli/gpuobs
[ $# -gt 0 ] || { echo "usage: $0 [BUILD_DIR] CAPTURE..." >&2; exit 2; }
T=$(mktemp -d /tmp/fleet-compare.XXXXXX)
CH_PID=''
cleanup() {
  [ -z "$CH_PID" ] || ch_stop  # set only once lib_clickhouse.sh started it
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE
# shellcheck source=bench/lib_clickhouse.sh
. "$(dirname "$0")/lib_clickhouse.sh"
URL="$CH/?database=gpuobs"
"$GPUOBS" clickhouse init "$URL" >/dev/null
echo "clickhouse-server $(chq 'SELECT version()') on $CH"
t0=$(date +%s.%N)
"$GPUOBS" ship --to "$URL" "$@"
t1=$(date +%s.%N)
echo "shipped in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s"
for t in launches api_calls copies syncs memory_ops stream_ops ioctls driver_objects gpu_metrics \
         gpu_process_metrics gpu_events gpu_times counters nccl_calls processes; do
  printf '  %-20s %s rows\n' "$t" "$(chq "SELECT count() FROM $t" gpuobs)"
done
REPORTS="kern_sum api_sum nccl_sum nccl_ranks nccl_stalls copy_sum memset_sum sync_sum ioctl_sum launches calls errors mem leaks gpu_sum stream_sum"
fail=0
for cap in "$@"; do
  host=$(sqlite3 "$cap" 'SELECT host FROM capture')
  echo "=== $cap (host $host)"
  for r in $REPORTS; do
    # CSV, byte for byte (types and column order too), but for the
    # columns of shipped stacks.
    "$GPUOBS" report --format csv "$r" "$cap" >"$T/local.csv"
    "$GPUOBS" report --format csv --clickhouse "$URL" --host "$host" "$r" >"$T/remote.csv"
    if python3 - "$r" "$T/local.csv" "$T/remote.csv" <<'PY'
import csv, sys
name = sys.argv[1]
def rows(path):
    out = list(csv.reader(open(path, newline="")))
    if name in ("leaks", "errors") and out:
        drop = [i for i, c in enumerate(out[0]) if c in ("stack_id", "stack")]
        out = [[v for i, v in enumerate(r) if i not in drop] for r in out]
    return out
a, b = rows(sys.argv[2]), rows(sys.argv[3])
a, b = a[1:], b[1:]  # the header row: compared with the rows below
if rows(sys.argv[2])[:1] != rows(sys.argv[3])[:1]:
    print(f"  {name:10s} DIFFERENT columns"); sys.exit(1)
if a == b:
    print(f"  {name:10s} same ({len(a)} rows)")
    sys.exit(0)
print(f"  {name:10s} DIFFERENT: {len(a)} local rows, {len(b)} on ClickHouse")
for i, (x, y) in enumerate(zip(a, b)):
    if x != y:
        print("    local:", ",".join(x)[:400]); print("    fleet:", ",".join(y)[:400])
        break
sys.exit(1)
PY
    then :; else fail=1; fi
  done
done
exit $fail
