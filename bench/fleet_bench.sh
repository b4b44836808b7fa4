#!/usr/bin/env bash
# Fleet (issue 23): how fast gpuobs ship sends one host's capture to
# ClickHouse, and how long gpuobs report --clickhouse kern_sum takes over a
# fleet-sized launches table. Starts its own throwaway clickhouse-server
# (temp dir, free ports on 127.0.0.1, stopped at exit), then:
#   1. ship: records LAUNCHES launches (tests/workloads/launch_workload on the
#      fake libcuda), ships the capture RUNS times, each into a fresh
#      database; prints rows/s, raw (RowBinary) bytes per launch as the CLI
#      counts them, the compressed bytes on the wire (one more, untimed ship
#      through a counting TCP relay) and gzip -1 of the same rows exported
#      back as a cross-check; next to it the pipeline's own rate: rows stored
#      in the capture / gpuobs record's wall time.
#   2. fleet: fills launches with HOSTS simulated hosts x PER_HOST launches,
#      generated inside ClickHouse (INSERT ... SELECT FROM system.numbers,
#      10 hosts a statement) until FILL_BUDGET_S is spent, then times kern_sum
#      over all hosts and over --host host-042 (the middle host when fewer
#      than 43 fit), RUNS runs each after one warm-up, --format csv >
#      /dev/null; then ships the capture once more into that full table.
#   3. a summary block with the figures and the exact commands.
# Needs python3 (the relay, the CSV sums), sqlite3, curl, gzip, GNU time.
# usage: bench/fleet_bench.sh [BUILD_DIR]   (root: gpuobs record; from the repo root)
#   env: LAUNCHES=1000000 RUNS=3 HOSTS=100 PER_HOST=1000000 FILL_BUDGET_S=300
#        CLICKHOUSE_SERVER=/usr/sbin/clickhouse-server
set -euo pipefail
B=${1:-build}
B=$(cd "$B" && pwd)
GPUOBS=$B/cli/gpuobs
FAKE=$B/tests/libcuda.so.1
LAUNCHES=${LAUNCHES:-1000000}
RUNS=${RUNS:-3}
HOSTS=${HOSTS:-100}
PER_HOST=${PER_HOST:-1000000}
FILL_BUDGET_S=${FILL_BUDGET_S:-300}
CHS=${CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
T=$(mktemp -d /tmp/fleet-bench.XXXXXX)
CH_PID='' RELAY_PID=''
cleanup() {
  [ -n "$RELAY_PID" ] && kill "$RELAY_PID" 2>/dev/null && wait "$RELAY_PID" 2>/dev/null
  [ -z "$CH_PID" ] || ch_stop  # set only once lib_clickhouse.sh started it
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE  # through cleanup
say() { echo; echo "### $*"; }
now() { date +%s.%N; }
# stats V...: "min median max" of the numbers
stats() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {printf "%.3f %.3f %.3f\n", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR]}'; }
# shellcheck source=bench/lib_clickhouse.sh
. "$(dirname "$0")/lib_clickhouse.sh"
echo "clickhouse-server $(chq 'SELECT version()') on $CH (tcp $TCP_PORT), data in $T/ch; $(nproc) cores"
echo "other load at start: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15-min load average)"

# --- 1. shipping one host's capture ---
say "1. ship: record $LAUNCHES launches, ship the capture $RUNS times (fresh database each)"
CAP=$T/ship.gpuobs
THREADS=2
REC_CMD="$GPUOBS record -f --libcuda $FAKE -o $CAP -- $B/tests/launch_workload --lib $FAKE --threads $THREADS --launches $((LAUNCHES / THREADS)) --truth $T/truth.json"
t0=$(now)
$REC_CMD >"$T/record.out" 2>&1
t1=$(now)
rec_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
grep '^gpuobs: recorded' "$T/record.out" | sed 's/^/  /'
cap_launches=$(sqlite3 "$CAP" 'SELECT count(*) FROM kernel_launches')
cap_rows=$(sqlite3 "$CAP" 'SELECT (SELECT count(*) FROM kernel_launches) + (SELECT count(*) FROM api_calls_timed)
  + (SELECT count(*) FROM nccl_calls) + (SELECT count(*) FROM processes)')
cap_span=$(sqlite3 "$CAP" 'SELECT printf("%.3f", (coalesce(end_mono_ns, committed_mono_ns) - start_mono_ns) / 1e9) FROM capture')
cap_dropped=$(sed -n 's/^gpuobs: recorded .*; \([0-9]*\) events dropped.*/\1/p' "$T/record.out" | head -1)
echo "  capture: $cap_launches launches, $cap_rows rows in the shipped tables, $(stat -c %s "$CAP") bytes;" \
  "record wall ${rec_wall} s (capture span ${cap_span} s), ${cap_dropped:-0} events dropped"
SHIP_URL="$CH/?database=gpuobs_ship"
ship_times=() rows_sent='' bytes_sent=''
for r in $(seq 1 "$RUNS"); do
  chq 'DROP DATABASE IF EXISTS gpuobs_ship' >/dev/null
  "$GPUOBS" clickhouse init "$SHIP_URL" >/dev/null
  t0=$(now)
  "$GPUOBS" ship --to "$SHIP_URL" --format csv "$CAP" >"$T/ship.csv"
  t1=$(now)
  s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
  ship_times+=("$s")
  IFS=, read -r _ _ _ rows_sent bytes_sent _ < <(sed -n 2p "$T/ship.csv")
  there=$(chq 'SELECT count() FROM launches' gpuobs_ship)
  echo "  run $r: ${s} s, rows_sent $rows_sent, bytes_sent $bytes_sent, launches in ClickHouse $there"
done
read -r ship_min ship_med ship_max < <(stats "${ship_times[@]}")
rate() { awk -v n="$1" -v s="$2" 'BEGIN {printf "%.0f", n / s}'; }
ship_rate_med=$(rate "$rows_sent" "$ship_med")
ship_rate_best=$(rate "$rows_sent" "$ship_min")
raw_per_launch=$(awk -v b="$bytes_sent" -v n="$cap_launches" 'BEGIN {printf "%.1f", b / n}')
pipe_rate=$(rate "$cap_rows" "$rec_wall")
pipe_rate_span=$(rate "$cap_rows" "$cap_span")

# The compressed bytes on the wire: one more ship (untimed) through a relay
# that counts what the client sends (HTTP headers, queries and gzip bodies).
cat >"$T/relay.py" <<'EOF'
import socket, sys, threading
target, port_file, count_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lock, total = threading.Lock(), [0]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
open(port_file, "w").write(str(srv.getsockname()[1]))
def pump(a, b, count):
    while True:
        d = a.recv(1 << 16)
        if not d:
            break
        if count:
            with lock:
                total[0] += len(d)
        b.sendall(d)
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    if count:
        with lock:
            open(count_file, "w").write(str(total[0]))
def serve(c):
    s = socket.create_connection(("127.0.0.1", target))
    t = threading.Thread(target=pump, args=(s, c, False))
    t.start()
    pump(c, s, True)
    t.join()
    c.close()
    s.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
wire_bytes='' wire_per_launch='n/a'
if command -v python3 >/dev/null; then
  python3 "$T/relay.py" "$HTTP_PORT" "$T/relay.port" "$T/relay.count" &
  RELAY_PID=$!
  for _ in $(seq 1 100); do [ -s "$T/relay.port" ] && break; sleep 0.1; done
  chq 'DROP DATABASE IF EXISTS gpuobs_ship' >/dev/null
  "$GPUOBS" clickhouse init "$SHIP_URL" >/dev/null
  echo 0 >"$T/relay.count"
  /usr/bin/time -f '%U %S %M' -o "$T/ship.time" \
    "$GPUOBS" ship --to "http://127.0.0.1:$(cat "$T/relay.port")/?database=gpuobs_ship" --format csv "$CAP" >/dev/null
  read -r ship_user ship_sys ship_rss_kb <"$T/ship.time"
  sleep 0.5
  wire_bytes=$(cat "$T/relay.count")
  wire_per_launch=$(awk -v b="$wire_bytes" -v n="$cap_launches" 'BEGIN {printf "%.1f", b / n}')
  kill "$RELAY_PID" 2>/dev/null; wait "$RELAY_PID" 2>/dev/null || true
  RELAY_PID=''
fi
# Cross-check: the same launches exported back as TabSeparated (in capture
# order) and gzip -1'd, as the shipper compresses each insert.
cols='host, host_id, segment, ts_ns, process_id, pid, process, tid, api, kernel, function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, cooperative, stack'  # kLaunchesTable
curl -sS "$CH/?database=gpuobs_ship" --data-binary "SELECT $cols FROM launches ORDER BY ts_ns FORMAT TabSeparated" >"$T/launches.tsv"
tsv_raw=$(stat -c %s "$T/launches.tsv")
tsv_gz=$(gzip -1 -c "$T/launches.tsv" | wc -c)
rm -f "$T/launches.tsv"
gz_per_launch=$(awk -v b="$tsv_gz" -v n="$cap_launches" 'BEGIN {printf "%.1f", b / n}')
echo "  wire (relay, client->server, all requests): ${wire_bytes:-n/a} bytes = $wire_per_launch bytes/launch"
echo "  that ship's own process (gpuobs ship, not the server): user ${ship_user:-?} s, sys ${ship_sys:-?} s, peak RSS ${ship_rss_kb:-?} KiB"
echo "  launches exported back: $tsv_raw bytes TSV, $tsv_gz bytes gzip -1 = $gz_per_launch bytes/launch"
chq 'DROP DATABASE IF EXISTS gpuobs_ship' >/dev/null

# --- 2. the fleet query ---
say "2. fleet: $HOSTS hosts x $PER_HOST launches (fill budget ${FILL_BUDGET_S} s), kern_sum all hosts and one host"
FLEET_URL="$CH/?database=gpuobs_fleet"
chq 'DROP DATABASE IF EXISTS gpuobs_fleet' >/dev/null
"$GPUOBS" clickhouse init "$FLEET_URL" >/dev/null
BASE_NS=$(($(date -u -d '2026-11-27 09:00' +%s) * 1000000000))  # one hour on one day: one date
# ~200 kernels, Zipf-like: popularity index k = 200 u^3 (the first 20 take
# ~46%), each kernel with its own block size, shared memory and grid range;
# 4 processes a host (pid, name, 4 streams each, tids pid..pid+7); 6
# segments a host (10 minutes each); each kernel's launches evenly over the
# hour plus jitter. Generated in the sort key's order (host, kernel name,
# ts_ns): one row per (host, kernel) from system.numbers, arrayJoin'd into
# that kernel's launches; MergeTree then writes each block about 3x faster
# than shuffled rows (same rows, same table).
# The kernels, computed once (as literals in fill_sql: 18.16 would evaluate
# these per row): names in sort order, each one's popularity index k, and
# the first launch of each within a host (cumulative Zipf-like counts).
IFS=$'\t' read -r NAMES K_OF BOUNDS < <(chq "
WITH arrayMap(kk -> concat(['ampere_sgemm_128x64_tn', 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>',
                'void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>',
                'flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::half_t>>',
                'ncclDevKernel_AllReduce_Sum_f32_RING_LL', 'void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>',
                'void at::native::elementwise_kernel<128, 2>', 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64'][kk % 8 + 1],
              '_v', toString(kk)), range(200)) AS by_k,
          arraySort(by_k) AS names,
          arrayMap(name -> indexOf(by_k, name) - 1, names) AS k_of,
          arrayPushFront(arrayMap(c -> toUInt64(round(c * $PER_HOST)),
            arrayCumSum(arrayMap(kk -> pow((kk + 1) / 200, 1 / 3) - pow(kk / 200, 1 / 3), k_of))), toUInt64(0)) AS bounds
SELECT names, k_of, bounds FORMAT TSV")
fill_sql() {  # fill_sql FIRST_HOST NHOSTS
  cat <<EOF
INSERT INTO launches ($cols)
SELECT host, host_id, segment, ts_ns, process_id, pid, process, tid, api, kernel, function, grid_x, grid_y, grid_z,
  block_x, block_y, block_z, shared_mem, stream, cooperative, stack
FROM (
  SELECT h, k, kernel, p, r1, r2,
    concat('host-', substring(toString(1000 + h), 2)) AS host,
    bitAnd(sipHash64(host), 9223372036854775807) AS host_id,
    toInt64($BASE_NS + intDiv(j * 3600000000000, cnt) + r1 % 1000) AS ts_ns,
    bitAnd(intHash64(h * 64 + intDiv(ts_ns - $BASE_NS, 600000000000)), 9223372036854775807) AS segment,
    toInt64(p + 1) AS process_id,
    toUInt32(1000 + intHash64(h * 16 + p) % 60000) AS pid,
    ['python3', 'pt_main_thread', 'python3', 'trainer'][p + 1] AS process,
    toUInt32(pid + intDiv(r1, 65536) % 8) AS tid,
    if(intDiv(r1, 1048576) % 4 = 3, 'cuLaunchKernel_ptsz', 'cuLaunchKernel') AS api,
    bitAnd(intHash64(h * 1000 + k), 140737488355327) AS function,
    toUInt32(1 + (intHash64(k) % 4096) * (1 + r2 % 4)) AS grid_x,
    toUInt32(if(k % 3 = 0, 1 + intDiv(r2, 16) % 8, 1)) AS grid_y,
    toUInt32(1) AS grid_z,
    toUInt32([32, 64, 128, 256, 512, 1024][k % 6 + 1]) AS block_x,
    toUInt32(1) AS block_y, toUInt32(1) AS block_z,
    toUInt32((k % 7) * 8192) AS shared_mem,
    toUInt64(94000000000000 + p * 4096 + intDiv(r2, 256) % 4 * 16) AS stream,
    toUInt8(k = 199) AS cooperative,
    concat('launch_', toString(k % 40), ' (kernels.cu:', toString(100 + k % 50), ') <- ',
           ['forward (model.py:', 'backward (autograd.py:', 'step (optim.py:'][intDiv(r2, 4096) % 3 + 1],
           toString(200 + (k * 7) % 90), ') <- train_step (train.py:', toString(300 + p), ') <- main (train.py:12)') AS stack
  FROM (
    SELECT h, k, kernel, cnt, j, intHash64(h * $PER_HOST + first + j) AS r1, intHash64(h * $PER_HOST + first + j + 1000000007) AS r2,
      intDiv(r1, 4294967296) % 4 AS p
    FROM (
      SELECT h, k, kernel, first, cnt, arrayJoin(range(cnt)) AS j
      FROM (
        SELECT number + $(($1 * 200)) AS hk, intDiv(hk, 200) AS h, toUInt32($K_OF[hk % 200 + 1]) AS k,
          $NAMES[hk % 200 + 1] AS kernel, $BOUNDS[hk % 200 + 1] AS first, toUInt64($BOUNDS[hk % 200 + 2] - first) AS cnt
        FROM system.numbers LIMIT $(($2 * 200))))))
EOF
}
BATCH=10
filled=0
fill_t0=$(now)
while [ "$filled" -lt "$HOSTS" ]; do
  n=$((HOSTS - filled < BATCH ? HOSTS - filled : BATCH))
  t0=$(now)
  # max_block_size=4: 4 (host, kernel) rows a source block, ~20,000 launches once expanded
  # (a whole host in one block evaluates 5x slower)
  curl -sS --fail-with-body "$CH/?database=gpuobs_fleet&max_block_size=4" --data-binary "$(fill_sql "$filled" "$n")" >/dev/null
  t1=$(now)
  filled=$((filled + n))
  spent=$(awk -v a="$fill_t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
  echo "  hosts $((filled - n))..$((filled - 1)): $((n * PER_HOST)) rows in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s (${spent} s so far)"
  # Stop when the next batch would end past the budget.
  awk -v s="$spent" -v a="$t0" -v b="$t1" -v f="$FILL_BUDGET_S" 'BEGIN {exit !(s + (b - a) > f)}' && break
done
fill_s=$(awk -v a="$fill_t0" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
fleet_rows=$(chq 'SELECT count() FROM launches' gpuobs_fleet)
# Let background merges settle (at most 120 s): a fleet table is merged.
for _ in $(seq 1 240); do
  [ "$(chq "SELECT count() FROM system.merges WHERE database = 'gpuobs_fleet'")" = 0 ] && break
  sleep 0.5
done
parts=$(chq "SELECT count() FROM system.parts WHERE database = 'gpuobs_fleet' AND table = 'launches' AND active")
disk=$(chq "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'gpuobs_fleet' AND table = 'launches' AND active")
summary=$(chq "SELECT uniqExact(host), uniqExact(kernel), uniqExact(host_id, pid), min(date), max(date), (max(ts_ns) - min(ts_ns)) / 1e9 FROM launches FORMAT TSV" gpuobs_fleet)
echo "  filled: $fleet_rows rows in ${fill_s} s; $parts active parts, $disk bytes on disk"
echo "  hosts, kernels, (host, pid)s, dates, span s: $summary"
# The one host: host-042, or the middle one when fewer than 43 were filled.
ONE=host-042
[ "$filled" -gt 42 ] || ONE=host-$(printf %03d $((filled / 2)))
q_all=() q_one=() q_fail=''
kern() {  # kern OUTFILE [--host H]: one timed kern_sum, seconds on stdout
  local out=$1 t0 t1
  shift
  t0=$(now)
  if ! "$GPUOBS" report --clickhouse "$FLEET_URL" kern_sum "$@" --format csv >"$out" 2>"$T/report.err"; then
    q_fail="$q_fail kern_sum $*: $(head -c 300 "$T/report.err");"
  fi
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}'
}
kern "$T/all.csv" >/dev/null  # warm-up
rows_all=$(($(wc -l <"$T/all.csv") - 1))
kern "$T/one.csv" --host "$ONE" >/dev/null
rows_one=$(($(wc -l <"$T/one.csv") - 1))
for r in $(seq 1 "$RUNS"); do
  q_all+=("$(kern /dev/null)")
  q_one+=("$(kern /dev/null --host "$ONE")")
  echo "  run $r: all hosts ${q_all[-1]} s, $ONE ${q_one[-1]} s"
done
read -r all_min all_med all_max < <(stats "${q_all[@]}")
read -r one_min one_med one_max < <(stats "${q_one[@]}")
csv_sum() { python3 -c 'import csv, sys; print(sum(int(r["launches"]) for r in csv.DictReader(open(sys.argv[1]))))' "$1"; }
launches_all=$(csv_sum "$T/all.csv")
launches_one=$(csv_sum "$T/one.csv")
echo "  answers: all hosts $rows_all kernels ($launches_all launches), $ONE $rows_one kernels ($launches_one launches)"
[ -n "$q_fail" ] && echo "  REPORT FAILED:$q_fail"
# The shipper's checks next to a full table: before each table's insert it
# counts the segment's rows there (WHERE host_id = .. AND segment = ..,
# neither in the sort key). The same capture shipped once into this table.
t0=$(now)
"$GPUOBS" ship --to "$FLEET_URL" --format csv "$CAP" >"$T/ship_full.csv"
t1=$(now)
ship_full=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
IFS=, read -r _ _ cap_segment _ < <(sed -n 2p "$T/ship_full.csv")
t0=$(now)
chq "SELECT count() FROM launches WHERE host_id = (SELECT any(host_id) FROM segments WHERE segment = $cap_segment) AND segment = $cap_segment" gpuobs_fleet >/dev/null
t1=$(now)
probe=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
echo "  ship of the same capture into this table: ${ship_full} s (into an empty one: median ${ship_med} s);" \
  "its per-table row count probe alone: ${probe} s"

say "summary ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
cat <<EOF
ship, one host ($cap_launches launches, $rows_sent rows, $RUNS runs, fresh database each):
  wall s min/median/max        $ship_min / $ship_med / $ship_max
  rows/s shipped (median, best) $ship_rate_med, $ship_rate_best
  bytes/launch raw RowBinary (CLI) $raw_per_launch   ($bytes_sent bytes_sent)
  bytes/launch on the wire     $wire_per_launch   (counting relay: HTTP requests, gzip bodies, queries)
  bytes/launch gzip -1 check   $gz_per_launch   (launches exported back as TSV, gzip -1)
  gpuobs ship process          user ${ship_user:-?} s, sys ${ship_sys:-?} s, peak RSS ${ship_rss_kb:-?} KiB (one run; the rest is the server)
pipeline peer (same run): rows stored / gpuobs record wall
  rows/s stored                $pipe_rate   ($cap_rows rows / $rec_wall s; over the capture's span ${cap_span} s: $pipe_rate_span)
  events dropped in record     ${cap_dropped:-0}   ($([ "${cap_dropped:-0}" -gt 0 ] && echo 'the writer was the bound: this is its rate' || echo 'none: the workload set the pace, the writer kept up'))
  ship / store ratio (median)  $(awk -v a="$ship_rate_med" -v b="$pipe_rate" 'BEGIN {printf "%.2f", a / b}')
fleet kern_sum ($fleet_rows rows: $filled hosts x $PER_HOST launches, filled in ${fill_s} s; $parts parts):
  all hosts s min/median/max   $all_min / $all_med / $all_max   ($rows_all kernels)
  --host $ONE min/median/max $one_min / $one_med / $one_max   ($rows_one kernels)
  failures                     ${q_fail:-none}
  ship into it (1 run)         $ship_full s   (empty database: $ship_med s; the row-count probe alone: $probe s)
commands:
  record: $REC_CMD
  ship:   $GPUOBS ship --to $SHIP_URL --format csv $CAP   (after DROP DATABASE + gpuobs clickhouse init)
  fill:   INSERT INTO launches (...) SELECT ... FROM system.numbers, $BATCH hosts x $PER_HOST a statement (fill_sql in this script)
  query:  $GPUOBS report --clickhouse $FLEET_URL kern_sum --format csv > /dev/null
          $GPUOBS report --clickhouse $FLEET_URL kern_sum --host $ONE --format csv > /dev/null
EOF
