#!/usr/bin/env bash
# Issues 22 and 24 on a lent NVIDIA host (as root, from the repo root).
#   PART=single  one GPU: a one-rank communicator through the system libnccl
#                (tests/gpu/nccl_single_rank) and through PyTorch's wheel copy
#                (torch.distributed, world size 1), each under gpuobs record.
#   PART=ddp     2+ GPUs, gpuobsd running first: torchrun DDP (plain, one rank
#                late every 10th step, one rank SIGSTOPped), then the reports.
#   PART=overhead 2+ GPUs: DDP step time, ROUNDS rounds of no gpuobs, the
#                empty-uprobe floor and gpuobs record (HIDDEN/BATCH: the model
#                and batch of bench/h100/torch_ddp.py; STEPS steps per run).
# NVLink multicast stays off (KINDS.md): NCCL_NVLS_ENABLE=0 and friends.
set -uo pipefail
B=${B:-.device-build}
PY=${PY:-$( [ -x /opt/torch/.venv/bin/python3 ] && echo /opt/torch/.venv/bin/python3 || echo python3)}
TORCHRUN=${TORCHRUN:-$(dirname "$PY")/torchrun}
[ -x "$TORCHRUN" ] || TORCHRUN="$PY -m torch.distributed.run"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
nvidia-smi -L; nproc
NGPU=$(nvidia-smi -L | wc -l)
PART=${PART:-single}
q() { "$B/gpuobs" sql "$1" "$2"; }

if [ "$PART" = single ]; then
  echo "=== system libnccl: $(ls -l /lib/x86_64-linux-gnu/libnccl.so.2* 2>&1 | head -2)"
  "$B/gpuobs" record -f -o /tmp/c.gpuobs -- "$B/nccl_single_rank" --iterations 10 2>&1 | tail -2
  q "SELECT api, count(*) AS calls, sum(bytes) AS bytes, min(seq) AS first_seq, max(seq) AS last_seq,
     count(DISTINCT printf('%x', stream)) AS streams, printf('%x', min(stream)) AS stream, min(rank) AS rank,
     max(nranks) AS nranks, sum(result <> 0) AS failed, sum(stack_id IS NOT NULL) AS with_stack
     FROM nccl_calls GROUP BY api ORDER BY api" /tmp/c.gpuobs
  q "SELECT DISTINCT library, reason FROM probes WHERE library LIKE '%nccl%'" /tmp/c.gpuobs
  q "SELECT * FROM nccl_comms" /tmp/c.gpuobs
  "$B/gpuobs" report nccl_sum /tmp/c.gpuobs
  echo "=== PyTorch world size 1 (the wheel's libnccl)"
  "$B/gpuobs" record -f -o /tmp/t.gpuobs -- "$PY" bench/h100/torch_nccl_single.py 20 2>&1 | tail -3
  q "SELECT api, count(*) AS calls, sum(bytes) AS bytes, max(seq) AS last_seq, count(DISTINCT stream) AS streams,
     printf('%x', min(stream)) AS stream, max(nranks) AS nranks, sum(result NOT IN (0, 7)) AS failed
     FROM nccl_calls GROUP BY api ORDER BY api" /tmp/t.gpuobs
  q "SELECT DISTINCT library, reason FROM probes WHERE library LIKE '%nccl%'" /tmp/t.gpuobs
  q "SELECT api, rank, nranks, device, comm_hash IS NOT NULL AS matched FROM nccl_comms" /tmp/t.gpuobs
  "$B/gpuobs" report nccl_sum /tmp/t.gpuobs
  q "SELECT name, value FROM counters WHERE name IN ('ring_records', 'ring_record_bytes', 'nccl_stalls')
     OR (name LIKE 'dropped%' AND value > 0)" /tmp/t.gpuobs
  echo "=== NCCL symbols probed per library (attached / failed: a symbol this NCCL does not export)"
  for f in /tmp/c.gpuobs /tmp/t.gpuobs; do
    q "SELECT library, status, count(DISTINCT symbol) AS symbols, group_concat(DISTINCT CASE WHEN status <> 'attached'
       THEN symbol END) AS which FROM probes WHERE library LIKE '%nccl%' GROUP BY library, status" "$f" 2>&1 | head -6
  done
  echo "=== what reduce_scatter_tensor did: the calls between each all_gather and the next all_reduce"
  q "WITH ag AS (SELECT ts_mono_ns AS t0, (SELECT min(ts_mono_ns) FROM nccl_calls b WHERE b.op = 'all_reduce'
       AND b.ts_mono_ns > a.ts_mono_ns) AS t1 FROM nccl_calls a WHERE op = 'all_gather')
     SELECT api, count(*) AS calls FROM api_calls, ag WHERE ts_mono_ns > t0 AND ts_mono_ns < t1 GROUP BY api
     ORDER BY calls DESC LIMIT 12" /tmp/t.gpuobs
  echo "=== the communicator tracks in the Chrome export of the PyTorch capture"
  "$B/gpuobs" export chrome -f -o /tmp/t.json /tmp/t.gpuobs
  "$PY" - <<'PYEOF'
import json
ev = json.load(open("/tmp/t.json"))["traceEvents"]
comms = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"
         and e["args"]["name"].startswith("NCCL comm")}
ranks = [(e["pid"], e["tid"], e["args"]["name"]) for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"
         and e["pid"] in comms]
on = {}
for e in ev:
    if e.get("ph") == "X" and e.get("pid") in comms:
        on[e["name"]] = on.get(e["name"], 0) + 1
print("communicators:", comms)
print("rank tracks:", ranks)
print("calls on them:", on)
PYEOF
fi

if [ "$PART" = ddp ]; then
  S=/tmp/gpuobsd-state; rm -rf $S; mkdir -p $S
  "$B/gpuobsd" --state-dir $S --status-file $S/status.json --nccl-stall ${STALL_S:-10} --log-level info \
    2>/tmp/gpuobsd.err &
  D=$!
  sleep 3
  echo "=== 1. torchrun --nproc-per-node=$NGPU DDP, 200 steps [$(date +%T)]"
  $TORCHRUN --nproc-per-node=$NGPU --master-port 29541 bench/h100/torch_ddp.py 200 2>&1 | grep -v "^W" | tail -3
  echo "=== 2. rank 1 sleeps 200 ms before every 10th step [$(date +%T)]"
  LATE_RANK=1 LATE_EVERY=10 LATE_MS=200 $TORCHRUN --nproc-per-node=$NGPU --master-port 29542 \
    bench/h100/torch_ddp.py 100 2>&1 | grep -v "^W" | tail -3
  echo "=== 3. rank 1 SIGSTOPs itself before step 30 [$(date +%T)]"
  STOP_RANK=1 STOP_STEP=30 $TORCHRUN --nproc-per-node=$NGPU --master-port 29543 bench/h100/torch_ddp.py 100 \
    >/tmp/stop.out 2>&1 &
  J=$!
  T0=$(date +%s)
  until grep -q "NCCL stall" /tmp/gpuobsd.err || [ $(( $(date +%s) - T0 )) -gt $(( ${STALL_S:-10} + 40 )) ]; do sleep 1; done
  echo "stall logged after $(( $(date +%s) - T0 )) s of the stopped job: $(grep 'NCCL stall' /tmp/gpuobsd.err | head -2)"
  ps -o pid,stat,cmd --ppid $(pgrep -f "master-port 29543" | head -1) 2>/dev/null | head -5
  pkill -9 -f torch_ddp.py; pkill -9 -f "master-port 29543"; wait $J 2>/dev/null
  sleep 2
  kill -TERM $D; wait $D; echo "gpuobsd exit $?"
  grep -E "warn|error" /tmp/gpuobsd.err | grep -v "probe " | head -10
  "$B/gpuobs" segments --state-dir $S 2>&1 | tail -3
  for f in $S/*.gpuobs; do
    echo "--- $f"
    q "SELECT count(*) AS nccl_calls, count(DISTINCT tgid) AS processes, count(DISTINCT comm_hash) AS comms FROM nccl_calls" "$f"
    "$B/gpuobs" report nccl_sum "$f" | head -12
    "$B/gpuobs" report nccl_ranks "$f" | head -12
    "$B/gpuobs" report nccl_stalls "$f" | head -12
    q "SELECT tgid, rank, state, last_seq, last_api FROM nccl_stall_ranks" "$f"
    # Whose Python frames the collectives' stacks carry (DDP calls NCCL
    # from the autograd thread: the main thread's, stacks.python_thread).
    q "SELECT n.tid = n.tgid AS main_thread, s.python_thread, s.python_end, count(*) AS calls
       FROM nccl_calls n LEFT JOIN stacks s ON s.id = n.stack_id GROUP BY 1, 2, 3" "$f"
    echo "--- communicator tracks of the Chrome export"
    "$B/gpuobs" export chrome -f -o /tmp/seg.json "$f" && "$PY" - <<'PYEOF'
import collections, json
ev = json.load(open("/tmp/seg.json"))["traceEvents"]
comms = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"
         and e["args"]["name"].startswith("NCCL comm")}
ranks = sorted((e["pid"], e["tid"], e["args"]["name"]) for e in ev if e.get("ph") == "M"
               and e.get("name") == "thread_name" and e["pid"] in comms)
on = collections.Counter((e["pid"], e["tid"], e["name"]) for e in ev if e.get("ph") == "X" and e.get("pid") in comms)
flows = sum(1 for e in ev if e.get("ph") in ("s", "f") and e.get("pid") in comms)
late = collections.Counter((e["pid"], e["tid"]) for e in ev if e.get("ph") == "X" and e.get("pid") in comms
                           and e.get("args", {}).get("arrival") == 2 and e["args"].get("after_first_ns", 0) >= 1e6)
print("communicators:", comms)
print("rank tracks:", ranks)
print("calls on rank tracks (pid, tid, op):", dict(on))
print("flow events between rank tracks:", flows)
print("arrived last, >= 1 ms after the first (pid, tid):", dict(late))
PYEOF
  done
fi

if [ "$PART" = overhead ]; then
  ROUNDS=${ROUNDS:-5}
  modes=(none floor gpuobs)
  for ((r = 0; r < ROUNDS; r++)); do
    for k in 0 1 2; do  # the order rotates each round: drift spreads over every mode
      m=${modes[$(((r + k) % 3))]}
      case $m in
        none) out=$($TORCHRUN --nproc-per-node=$NGPU --master-port 2955$r bench/h100/torch_ddp.py ${STEPS:-200} 2>/dev/null | tail -1) ;;
        floor) out=$("$B/gpuobs_bench" floor -- $TORCHRUN --nproc-per-node=$NGPU --master-port 2956$r bench/h100/torch_ddp.py ${STEPS:-200} 2>/dev/null | tail -1) ;;
        gpuobs) out=$("$B/gpuobs" record -f -o /tmp/o.gpuobs -- $TORCHRUN --nproc-per-node=$NGPU --master-port 2957$r bench/h100/torch_ddp.py ${STEPS:-200} 2>/dev/null | tail -1) ;;
      esac
      echo "$m $out"
    done
  done | tee /tmp/overhead.txt
  "$PY" - /tmp/overhead.txt <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    mode, _, rest = line.partition(" ")
    try: runs.setdefault(mode, []).append(json.loads(rest)["step_ms"])
    except Exception: pass
med = {m: statistics.median(v) for m, v in runs.items() if v}
for m, v in runs.items(): print(m, "step_ms", v, "median", med.get(m))
if "none" in med:
    for m in ("floor", "gpuobs"):
        if m in med: print(f"{m}/none = {med[m] / med['none']:.4f}")
PY
fi
