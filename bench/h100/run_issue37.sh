#!/usr/bin/env bash
# Issue 37 on a lent GPU host: every GPU process from its first call.
# gpuobsd runs with system discovery off (GPUOBS_LIBCUDA_SEARCH_PATH names
# an empty directory), so the host's libcuda.so.1 (/usr/local/nvidia/lib64,
# reached through LD_LIBRARY_PATH) and PyTorch's libnccl are met for the
# first time when the first process maps them: that process is held at the
# mapping; the next ones find them attached.
#   1. 10 short PyTorch processes back to back (torch_short.py, CUPTI counts
#      through torch.profiler): gpuobs's launches, copies and memsets per
#      process beside CUPTI's; the mappings (held / attached before) and the
#      capture's state.
#   2. startup_bench on the fake libcuda: process start-up with and without
#      the daemon, and the holds' distribution.
#   3. startup_bench on the real libcuda (cuInit and one launch of nothing:
#      the driver's own start-up dominates).
# usage: bench/h100/run_issue37.sh   (as root from the repo root; B= the staged binaries)
set -uo pipefail
B=${B:-.device-build}
PY=${PY:-/opt/torch/.venv/bin/python3}
OUTD=${OUT:-/tmp/gpuobs-issue37}
mkdir -p "$OUTD"
EMPTY=$(mktemp -d)
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
say() { printf '\n=== %s\n' "$*"; }
sql() { "$B/gpuobs" sql --format csv "$1" "$2"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uname -r; "$PY" --version

say "1. gpuobsd (discovery off), 10 short PyTorch processes back to back"
rm -f "$OUTD"/d.gpuobs*
GPUOBS_LIBCUDA_SEARCH_PATH=$EMPTY GPUOBS_LIBHIP_SEARCH_PATH=$EMPTY \
  "$B/gpuobsd" --db "$OUTD/d.gpuobs" --no-gpu-devices --status-file "$OUTD/status.json" 2>"$OUTD/gpuobsd.log" &
D=$!
for _ in $(seq 200); do grep -q "capturing to" "$OUTD/gpuobsd.log" && break; sleep 0.1; done
: > "$OUTD/truth.jsonl"
for i in $(seq 10); do
  s=$(date +%s%N)
  "$PY" bench/h100/torch_short.py 20 >> "$OUTD/truth.jsonl"
  echo "run $i: $(( ($(date +%s%N) - s) / 1000000 )) ms"
done
sleep 1
"$B/gpuobs" status --status-file "$OUTD/status.json" | grep -E "capture|holds"
kill -TERM $D; wait $D; echo "gpuobsd exit $?"
"$PY" - "$OUTD/d.gpuobs" "$OUTD/truth.jsonl" <<'PYEOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ok = 0
rows = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
for t in rows:
    pid = t["pid"]
    k = db.execute("SELECT count(*) FROM kernel_launches WHERE tgid = ?", (pid,)).fetchone()[0]
    c = db.execute("SELECT count(*) FROM copies WHERE tgid = ? AND kind = 'copy'", (pid,)).fetchone()[0]
    m = db.execute("SELECT count(*) FROM copies WHERE tgid = ? AND kind = 'memset'", (pid,)).fetchone()[0]
    maps = db.execute("SELECT group_concat(library || ':' || hold || CASE WHEN hold = 'held' THEN "
                      "printf(' %.1f ms', held_ns / 1e6) ELSE '' END || CASE calls_before_attach WHEN 1 THEN "
                      "' MISSED: ' || reason ELSE '' END, '; ') FROM library_maps WHERE tgid = ?", (pid,)).fetchone()[0]
    same = (k, c, m) == (t["kernels"], t["memcpy"], t["memset"])
    ok += same
    print(f"pid {pid}: kernels gpuobs {k} / CUPTI {t['kernels']}, memcpy {c} / {t['memcpy']}, "
          f"memset {m} / {t['memset']} {'EQUAL' if same else 'DIFFERENT'}; {maps}")
print(f"{ok} of {len(rows)} processes equal to CUPTI")
print("capture state:", db.execute("SELECT state FROM capture").fetchone()[0])
PYEOF
grep -E "capture incomplete|held without" "$OUTD/gpuobsd.log" | head -5

say "2. process start-up, fake libcuda (startup_bench)"
"$B/startup_bench" --gpuobsd "$B/gpuobsd" --workload "$B/lib_needed_workload" --lib "$B/libcuda.so.1" --runs ${RUNS:-100}

say "3. process start-up, the real libcuda (cuInit + 1 launch)"
"$B/startup_bench" --gpuobsd "$B/gpuobsd" --workload "$B/lib_needed_workload" \
  --lib "$(readlink -f /usr/local/nvidia/lib64/libcuda.so.1)" --runs ${RUNS_REAL:-30}
rm -rf "$EMPTY"
