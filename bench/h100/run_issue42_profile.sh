#!/usr/bin/env bash
# Issue 42: where the tiny-op loop's overhead under gpuobs record goes.
#   1. µs/op per mode (none, floor, default, no Python frames, no stacks,
#      --unwind bpf), ROUNDS alternating rounds.
#   2. Each BPF program's mean run time and count (kernel.bpf_stats_enabled,
#      read from gpuobs's program fds while the workload lingers; names
#      from /proc/kallsyms by the program's tag), default and no-Python.
#   3. perf record -a -g over the default mode: the workload's samples by
#      symbol (kernel, BPF and user), with and without children.
# usage: B=DIR [PERF=DIR] bash bench/h100/run_issue42_profile.sh  (root;
#        PERF: a carried perf binary and its libraries, bin/perf + lib/)
set -uo pipefail
B=${B:-.device-min}
PY=${PY:-/opt/torch/.venv/bin/python3}
ITERS=${ITERS:-100000}
ROUNDS=${ROUNDS:-3}
OUTD=${OUT:-/tmp/gpuobs-profile}
mkdir -p "$OUTD"
T=$(mktemp -d)
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
LIBCUDA=$(readlink -f /usr/local/nvidia/lib64/libcuda.so.1)
echo "commit: $(cat "$B/COMMIT" 2>/dev/null || echo unknown)"
tiny=(bench/h100/torch_tiny_ops.py --iters "$ITERS")

run_mode() {  # mode [extra args for the workload] -> the workload's JSON line
  local m=$1; shift
  case $m in
    none) $PY "${tiny[@]}" "$@" ;;
    floor) "$B/gpuobs_bench" floor --libcuda "$LIBCUDA" -- $PY "${tiny[@]}" "$@" 2>/dev/null ;;
    default) "$B/gpuobs" record -f -o "$T/d.gpuobs" -- $PY "${tiny[@]}" "$@" 2>/dev/null ;;
    nopython) "$B/gpuobs" record -f --python-stacks off -o "$T/np.gpuobs" -- $PY "${tiny[@]}" "$@" 2>/dev/null ;;
    nostack) "$B/gpuobs" record -f --stack-depth 0 -o "$T/ns.gpuobs" -- $PY "${tiny[@]}" "$@" 2>/dev/null ;;
    bpf) "$B/gpuobs" record -f --unwind bpf -o "$T/b.gpuobs" -- $PY "${tiny[@]}" "$@" 2>/dev/null ;;
  esac
}

echo "=== 1. us/op, $ITERS ops, $ROUNDS rounds"
modes=(none floor default nopython nostack bpf)
for ((r = 0; r < ROUNDS; r++)); do
  for ((k = 0; k < ${#modes[@]}; k++)); do
    m=${modes[$(((r + k) % ${#modes[@]}))]}
    echo "$m $(run_mode "$m" | grep '^{' | tail -1)"
  done
done | tee "$OUTD/modes.txt"
$PY - "$OUTD/modes.txt" <<'EOF'
import json, statistics, sys
v = {}
for l in open(sys.argv[1]):
    m, _, j = l.partition(" ")
    try: v.setdefault(m, []).append(json.loads(j)["us_per_op"])
    except Exception: pass
base = statistics.median(v.get("none", [0]))
fl = statistics.median(v.get("floor", [0])) - base
for m, xs in v.items():
    med = statistics.median(xs)
    print(f"{m:9s} median {med:.3f} us/op  overhead {med - base:+.3f} us  x floor {((med - base) / fl) if fl else 0:.2f}")
EOF

echo "=== 1b. the launch stacks of the default capture: depth, end, frames by module"
$PY - "$T/d.gpuobs" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = db.execute("SELECT s.id, s.depth, s.end_reason, sum(a.launches) FROM launch_agg a JOIN stacks s ON s.id = a.stack_id"
                  " GROUP BY s.id ORDER BY 4 DESC LIMIT 3").fetchall()
for sid, depth, end, n in rows:
    print(f"stack {sid}: {n} launches, depth {depth}, end {end}")
    for pos, mod, sym, kind in db.execute("SELECT position, module, symbol, kind FROM stack_symbols WHERE stack_id = ?"
                                          " ORDER BY position", (sid,)):
        print(f"  {pos:3d} {kind or '':7s} {mod.rsplit('/', 1)[-1][:28]:28s} {(sym or '?')[:90]}")
EOF

echo "=== 2. BPF programs' run time (bpf_stats)"
old=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
for m in default nopython; do
  flag=""; [ $m = nopython ] && flag="--python-stacks off"
  "$B/gpuobs" record -f $flag -o "$T/s.gpuobs" -- $PY "${tiny[@]}" --linger 4 >"$T/s.out" 2>&1 &
  rp=$!
  for _ in $(seq 600); do grep -q us_per_op "$T/s.out" && break; sleep 0.1; done
  gp=$(pgrep -n -f "gpuobs record -f $flag -o $T/s.gpuobs")
  echo "--- $m (gpuobs pid $gp): $(grep us_per_op "$T/s.out")"
  $PY - "$gp" <<'EOF'
import glob, sys
pid = sys.argv[1]
names = {}
for l in open("/proc/kallsyms"):
    p = l.split()
    if len(p) >= 3 and p[2].startswith("bpf_prog_"):
        rest = p[2][len("bpf_prog_"):]
        tag, _, name = rest.partition("_")
        names[tag] = name
rows = []
for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
    try: kv = dict((a.strip(), b.strip()) for a, b in (l.split(":", 1) for l in open(f) if ":" in l))
    except OSError: continue
    if "prog_tag" not in kv or "run_cnt" not in kv: continue
    n, t = int(kv["run_cnt"]), int(kv["run_time_ns"])
    if n: rows.append((t, n, names.get(kv["prog_tag"], kv["prog_tag"])))
for t, n, name in sorted(rows, reverse=True)[:15]:
    print(f"  {name:40s} runs {n:9d}  total {t/1e6:9.1f} ms  mean {t/n:8.1f} ns")
EOF
  wait $rp
done
sysctl -qw kernel.bpf_stats_enabled="$old"

echo "=== 3. perf over the default mode"
if [ -n "${PERF:-}" ] && LD_LIBRARY_PATH=$PERF/lib "$PERF/bin/perf" --version; then
  P() { LD_LIBRARY_PATH=$PERF/lib "$PERF/bin/perf" "$@"; }
  "$B/gpuobs" record -f -o "$T/p.gpuobs" -- $PY "${tiny[@]}" --warmup 2000 >"$T/p.out" 2>&1 &
  rp=$!
  sleep 6  # past torch's import and CUDA start
  P record -a -g -F 1999 -o "$T/perf.data" -- sleep 4 2>&1 | tail -1
  wait $rp
  cat "$T/p.out" | grep us_per_op
  P report -i "$T/perf.data" --stdio --no-children --sort comm,dso,sym --percent-limit 0.7 2>/dev/null \
    | grep -v '^$' | grep -E '^ +[0-9]' | head -60 | tee "$OUTD/perf_self.txt"
  echo "--- children (python process only)"
  P report -i "$T/perf.data" --stdio --children --comm python3 --sort sym --percent-limit 2 -g none 2>/dev/null \
    | grep -E '^ +[0-9]' | head -60 | tee "$OUTD/perf_children.txt"
else
  echo "no perf carried (PERF=DIR)"
fi
rm -rf "$T"
