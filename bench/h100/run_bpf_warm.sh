#!/usr/bin/env bash
# --unwind bpf, steady state: a warm-up PyTorch process builds the tables,
# then the training loop and a tiny-op loop; per process: launches, how many
# reach the Python interpreter, empty stacks, depth of the training loop.
# usage: bench/h100/run_bpf_warm.sh   (as root, from the repo root)
set -uo pipefail
B=${B:-.device-build}
[ -d /sys/kernel/tracing/events/syscalls ] || mount -t tracefs tracefs /sys/kernel/tracing
$B/gpuobs record -f -o /tmp/e.gpuobs --unwind bpf -- sh -c "python3 bench/h100/torch_tiny_ops.py --iters 1000 >/dev/null; sleep ${WARM_S:-25}; python3 bench/h100/torch_train_step.py; python3 bench/h100/torch_tiny_ops.py --iters 2000" 2>&1 | tail -1
python3 - /tmp/e.gpuobs <<'PY'
import sqlite3, sys
d = sqlite3.connect(sys.argv[1])
print(d.execute("SELECT group_concat(name || '=' || value, ' ') FROM counters WHERE name LIKE 'unwind%' OR name LIKE 'bpf_unw%' OR name LIKE 'dropped_launch%'").fetchone()[0])
py = "(SELECT stack_id FROM stack_symbols WHERE symbol LIKE '%PyEval_EvalFrame%')"
for pid, n, reach, empty in d.execute(f"""SELECT k.process_id, count(*), sum(k.stack_id IN {py}),
        sum(k.stack_id IN (SELECT id FROM stacks WHERE depth = 0)) FROM kernel_launches k GROUP BY 1"""):
    depths = sorted(r[0] for r in d.execute("SELECT s.depth FROM kernel_launches k JOIN stacks s ON s.id = k.stack_id WHERE k.process_id = ?", (pid,)))
    ends = dict(d.execute("SELECT s.end_reason, count(*) FROM kernel_launches k JOIN stacks s ON s.id = k.stack_id WHERE k.process_id = ? GROUP BY 1", (pid,)).fetchall())
    print(f"process {pid}: {n} launches, {reach} reach Python, {empty} empty, depth median {depths[len(depths)//2]} p99 {depths[int(len(depths)*0.99)]}, ends {ends}")
PY
