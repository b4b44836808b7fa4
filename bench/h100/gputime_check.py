"""Per kernel name: gpuobs --gpu-time's count and total GPU time (one run)
against torch.profiler's (another run of the same workload: CUPTI's activity
callbacks are per process, so the two cannot share a run). The workload
(torch_gputime.py) repeats fixed-size kernels, so per-kernel means compare.
usage: gputime_check.py CAPTURE PROFILE_JSON
"""
import json
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
prof = json.load(open(sys.argv[2]))
ours = {}
for name, n, total in db.execute(
        "SELECT kernel, count(*), sum(duration_ns) FROM gpu_times WHERE call_table = 'kernel_launches' GROUP BY kernel"):
    ours[name] = (n, total)
print(f"{'kernel':70} {'n ours':>7} {'n prof':>7} {'mean ours ns':>13} {'mean prof ns':>13} {'diff':>7}")
worst = 0.0
for name, (n, total) in sorted(ours.items(), key=lambda kv: -kv[1][1]):
    p = prof.get(name)
    if not p:
        # torch names some kernels by their demangled short name; try a prefix match
        cands = [k for k in prof if k and (name.startswith(k) or k.startswith(name[:60]))]
        p = prof[cands[0]] if cands else None
    if not p or p[0] == 0:
        print(f"{name[:70]:70} {n:7} {'-':>7} {total / n:13.0f}")
        continue
    mo, mp = total / n, p[1] / p[0]
    diff = (mo - mp) / mp
    worst = max(worst, abs(diff))
    print(f"{name[:70]:70} {n:7} {p[0]:7} {mo:13.0f} {mp:13.0f} {diff * 100:6.2f}%")
print(f"largest per-kernel mean difference: {worst * 100:.2f}% (target: within 1%)")
