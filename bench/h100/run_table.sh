#!/usr/bin/env bash
# Issue 42: the whole performance table in one run on a lent GPU host, each
# figure beside its floor or peer measured in the same run. Medians of
# ROUNDS alternating rounds (the order rotated each round, so drift hits
# every mode alike). Prints every run, then the table (markdown) at the end.
#   1. PyTorch tiny-op loop, us/op: no observer; an empty uprobe on the same
#      symbols (the floor); gpuobs record (default: fp stacks + Python
#      frames); --unwind bpf; --gpu-time; gpuobsd running; torch.profiler
#      without and with with_stack; nsys profile --trace=cuda if installed.
#   2. 4096^2 bf16 matmul loop: gpuobs record's overhead in %.
#   3. Bytes on disk per launch (the tiny-op capture and a 300-step training
#      loop) and the share of launches with Python file:line frames.
#   4. gpuobsd's CPU per event and its drops at 0.5, 1, 1.5 and 2 M
#      launches/s offered (pipeline_bench, 8 processes on the fake libcuda,
#      PIPE_SECONDS each, default 2). Run last: it is the longest section
#      (counting what it stored takes longer than offering it), and a run cut
#      at the call's limit then loses only its last rates.
#   5. --gpu-time kernel durations against CUPTI's via torch.profiler.
#   6. gpuobs's NVML/GPM samples against nvidia-smi's during a matmul load.
#   7. gpuobs report times on the run's largest capture, and per launch
#      extrapolated to 100 M launches.
# Sections run in the order 1, 2, 3, 5, 6, 7, 4; ~560 s on the H100 with the
# defaults (one device call is at most 600 s).
# usage: bench/h100/run_table.sh   (root, repo root; B= the staged binaries
#        from scripts/stage-device.sh; ROUNDS=5 ITERS=30000)
set -uo pipefail
B=${B:-.device-build}
PY=${PY:-/opt/torch/.venv/bin/python3}
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-30000}
MM_ITERS=${MM_ITERS:-2000}
PIPE_SECONDS=${PIPE_SECONDS:-2}
OUTD=${OUT:-/tmp/gpuobs-table}
mkdir -p "$OUTD"
T=$(mktemp -d)
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
export PYTHONUNBUFFERED=1
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
LIBCUDA=$(readlink -f /usr/local/nvidia/lib64/libcuda.so.1)
R=$OUTD/results.jsonl  # in $OUT as it goes: a run cut at its limit keeps its rows
: >"$R"
say() { printf '\n=== %s\n' "$*"; }
note() { printf '%s\n' "$1" >>"$R"; }  # one JSON object per line
tiny() { $PY bench/h100/torch_tiny_ops.py --iters "$ITERS" "$@"; }
SECONDS_T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; $PY --version
echo "commit: $(cat "$B/COMMIT" 2>/dev/null || echo unknown)"
HAVE_NSYS=0
command -v nsys >/dev/null && HAVE_NSYS=1

start_daemon() {
  "$B/gpuobsd" --db "$T/daemon.gpuobs" --no-gpu-devices --status-file "$T/status.json" 2>"$T/gpuobsd.log" &
  DPID=$!
  for _ in $(seq 300); do grep -q "capturing to" "$T/gpuobsd.log" && return 0; sleep 0.1; done
  echo "gpuobsd did not start" >&2
}
stop_daemon() { kill -TERM "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; rm -f "$T"/daemon.gpuobs*; }

run_tiny() {  # mode -> one JSON line of torch_tiny_ops.py
  case $1 in
    none) tiny ;;
    floor) "$B/gpuobs_bench" floor --libcuda "$LIBCUDA" -- $PY bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    default) "$B/gpuobs" record -f -o "$T/default.gpuobs" -- $PY bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    bpf) "$B/gpuobs" record -f --unwind bpf -o "$T/bpf.gpuobs" -- $PY bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    gputime) "$B/gpuobs" record -f --gpu-time -o "$T/gt.gpuobs" -- $PY bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null ;;
    daemon) start_daemon; tiny; stop_daemon ;;
    profiler) tiny --profiler plain 2>/dev/null ;;
    profiler_stack) tiny --profiler stack 2>/dev/null ;;
    nsys) nsys profile --trace=cuda -f true -o "$T/nsys" $PY bench/h100/torch_tiny_ops.py --iters "$ITERS" 2>/dev/null |
            grep '^{' ;;
  esac
}

say "1. tiny-op loop ($ITERS x.add_ per run, $ROUNDS rounds)"
modes=(none floor default bpf gputime daemon profiler profiler_stack)
((HAVE_NSYS)) && modes+=(nsys)
n=${#modes[@]}
for ((r = 0; r < ROUNDS; r++)); do
  for ((k = 0; k < n; k++)); do
    m=${modes[$(((r + k) % n))]}
    line=$(run_tiny "$m" | grep '^{' | tail -1)
    echo "$m $line"
    [ -n "$line" ] && note "{\"section\": \"tiny\", \"mode\": \"$m\", \"run\": $line}"
  done
done
echo "elapsed $(( $(date +%s) - SECONDS_T0 )) s"

say "2. matmul loop (4096^2 bf16, $MM_ITERS per run, $ROUNDS rounds)"
for ((r = 0; r < ROUNDS; r++)); do
  for m in $( ((r % 2)) && echo "default none" || echo "none default"); do
    if [ "$m" = none ]; then line=$($PY bench/h100/torch_tiny_ops.py --matmul 4096 --iters "$MM_ITERS" --warmup 50 | tail -1)
    else line=$("$B/gpuobs" record -f -o "$T/mm.gpuobs" -- $PY bench/h100/torch_tiny_ops.py --matmul 4096 \
                  --iters "$MM_ITERS" --warmup 50 2>/dev/null | tail -1); fi
    echo "$m $line"
    note "{\"section\": \"matmul\", \"mode\": \"$m\", \"run\": $line}"
  done
done
echo "elapsed $(( $(date +%s) - SECONDS_T0 )) s"

say "3. bytes per launch and Python frames: the tiny-op capture and 300 training steps"
"$B/gpuobs" record -f -o "$T/train.gpuobs" -- $PY bench/h100/torch_train.py 300 2>"$T/train.err" | tail -2
tail -3 "$T/train.err"
for c in default train; do
  $PY - "$T/$c.gpuobs" "$c" >>"$R" <<'PYEOF'
import json, os, sqlite3, sys
path, name = sys.argv[1], sys.argv[2]
db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
launches = db.execute("SELECT coalesce(sum(launches), 0) FROM launch_agg").fetchone()[0]
py = db.execute("SELECT coalesce(sum(launches), 0) FROM launch_agg WHERE stack_id IN "
                "(SELECT DISTINCT stack_id FROM stack_symbols WHERE kind = 'python' AND line > 0)").fetchone()[0]
size = os.path.getsize(path) + (os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0)
print(json.dumps({"section": "disk", "capture": name, "launches": launches, "bytes": size,
                  "python_launches": py}))
PYEOF
done
tail -2 "$R"
echo "elapsed $(( $(date +%s) - SECONDS_T0 )) s"

say "5. --gpu-time kernel durations against CUPTI (torch.profiler), same kernels"
"$B/gpuobs" record -f --gpu-time -o "$T/gtk.gpuobs" -- $PY bench/h100/torch_gputime.py none 2>&1 | grep "^gpuobs:"
$PY bench/h100/torch_gputime.py profile "$T/prof.json" 2>/dev/null | tail -1
$PY bench/h100/gputime_check.py "$T/gtk.gpuobs" "$T/prof.json" | tee "$T/gputime.txt" | tail -8
echo "elapsed $(( $(date +%s) - SECONDS_T0 )) s"

say "6. NVML/GPM samples against nvidia-smi during a matmul load"
nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw,clocks.sm,memory.used --format=csv,noheader,nounits \
  -lms 100 >"$T/smi.csv" &
SMI=$!
"$B/gpuobs" record -f --detail-interval-ms 100 -o "$T/busy.gpuobs" -- $PY bench/h100/torch_busy.py "$T/phases.json" 3 \
  2>/dev/null | tail -1
kill $SMI 2>/dev/null
$PY bench/h100/metrics_check.py "$T/busy.gpuobs" "$T/smi.csv" "$T/phases.json" | tee "$T/metrics.txt" | tail -12
echo "elapsed $(( $(date +%s) - SECONDS_T0 )) s"

say "7. report times on the largest capture"
big=$(ls -S "$T"/*.gpuobs | head -1)
bl=$($PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT coalesce(sum(launches),0) FROM launch_agg').fetchone()[0])" "$big")
echo "largest: $big ($bl launches)"
for rep in $("$B/gpuobs" report --list --format csv 2>/dev/null | tail -n +2 | cut -d, -f1); do
  s=$(date +%s%N)
  "$B/gpuobs" report "$rep" "$big" >/dev/null 2>&1
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  note "{\"section\": \"report\", \"report\": \"$rep\", \"ms\": $ms, \"launches\": $bl}"
done
if [ -x "$B/report_bench" ] && (( $(date +%s) - SECONDS_T0 < ${REPORT_BENCH_BEFORE_S:-300} )); then
  echo "--- report_bench: every report on a written capture of ${REPORT_LAUNCHES:-10000000} launches"
  "$B/report_bench" --launches "${REPORT_LAUNCHES:-10000000}" 2>&1 | tee "$T/report_bench.txt" | tail -40
  $PY - "$T/report_bench.txt" >>"$R" <<'PYEOF'
import json, re, sys
text = open(sys.argv[1]).read()
m = re.search(r"capture: (\d+) launches", text)
n = int(m.group(1)) if m else 0
for name, secs in re.findall(r"^(\w+)\s+([0-9.]+)\s+\d+", text, re.M):
    print(json.dumps({"section": "report_bench", "report": name, "ms": float(secs) * 1000, "launches": n}))
PYEOF
fi
echo "elapsed $(( $(date +%s) - SECONDS_T0 )) s"

say "4. gpuobsd CPU per event and drops at offered rates (8 processes, fake libcuda)"
# Highest rate first: a run cut at the call's limit loses the lowest.
for rate in 2000000 1500000 1000000 500000; do
  out=$("$B/pipeline_bench" --mode daemon --procs 8 --seconds "$PIPE_SECONDS" --rate $((rate / 8)) --lib "$B/libcuda.so.1" \
          --gpuobsd "$B/gpuobsd" --gpuobs "$B/gpuobs" 2>&1)
  echo "--- offered $rate/s"
  echo "$out" | grep -E '^(offered|stored|drops|cpu|complete|on disk)'
  offered=$(echo "$out" | sed -n 's/^offered .* = \([0-9]*\) launches\/s.*/\1/p')
  stored_pct=$(echo "$out" | sed -n 's/^stored .*(\([0-9.]*\)% of offered).*/\1/p')
  ns=$(echo "$out" | sed -n 's/^cpu .* = \([0-9]*\) ns per stored launch.*/\1/p')
  drops=$(echo "$out" | sed -n 's/^drops *//p' | tr ' ' '\n' | grep -c '=[1-9]')
  note "{\"section\": \"daemon\", \"rate\": $rate, \"offered\": ${offered:-0}, \"stored_pct\": ${stored_pct:-0}, \"ns_per_event\": ${ns:-0}, \"drop_kinds\": ${drops:-0}}"
done
echo "elapsed $(( $(date +%s) - SECONDS_T0 )) s"

say "the table"
cp "$T/gputime.txt" "$T/metrics.txt" "$OUTD/" 2>/dev/null
$PY bench/h100/table_summary.py "$R" "$T/gputime.txt" "$T/metrics.txt" | tee "$OUTD/table.md"
rm -rf "$T"
