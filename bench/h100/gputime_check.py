"""Per kernel name: gpuobs --gpu-time's GPU durations (one run) against
torch.profiler's (another run of the same workload: CUPTI's activity
callbacks are per process, so the two cannot share a run). The workload
(torch_gputime.py) repeats fixed-size kernels; medians compare (our run
also holds the warm-up iteration, the profiled one does not).
usage: gputime_check.py CAPTURE PROFILE_JSON
"""
import json
import sqlite3
import statistics
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
prof = json.load(open(sys.argv[2]))
ours = {}
for name, d in db.execute("SELECT kernel, duration_ns FROM gpu_times WHERE call_table = 'kernel_launches'"):
    ours.setdefault(name, []).append(d)
print(f"{'kernel':70} {'n ours':>7} {'n prof':>7} {'median ours':>12} {'median prof':>12} {'diff':>7}")
worst = 0.0
for name, ds in sorted(ours.items(), key=lambda kv: -sum(kv[1])):
    p = prof.get(name)
    if not p:
        cands = [k for k in prof if k and (name.startswith(k) or k.startswith(name[:60]))]
        p = prof[cands[0]] if cands else None
    mo = statistics.median(ds)
    if not p:
        print(f"{name[:70]:70} {len(ds):7} {'-':>7} {mo:12.0f}")
        continue
    mp = statistics.median(p)
    diff = (mo - mp) / mp
    worst = max(worst, abs(diff))
    print(f"{name[:70]:70} {len(ds):7} {len(p):7} {mo:12.0f} {mp:12.0f} {diff * 100:6.2f}%")
print(f"largest per-kernel median difference: {worst * 100:.2f}% (target: within 1%)")
