"""Issue 18's H100 figures from one capture of torch_pystacks.py.

usage: pystacks_check.py CAPTURE INFO.json
Prints: launches of the script's process; the share with at least one Python
frame, and with a frame of the script itself; python_end of their stacks;
and, inside the profiled window, per script line the kernels gpuobs
attributes (innermost frame of the script in the launch's stack) beside
torch.profiler's, with the share of distinct launch stacks whose innermost
script line the profiler also names for kernels.
"""
import collections
import json
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
info = json.load(open(sys.argv[2]))
me = info["script"]
pid = info["pid"]

# The innermost frame of the script, and whether any Python frame, per stack.
stack_info = {}
for sid, pos, kind, file, line, end, sym in db.execute(
        "SELECT ss.stack_id, ss.position, ss.kind, ss.file, ss.line, s.python_end, ss.symbol FROM stack_symbols ss"
        " JOIN stacks s ON s.id = ss.stack_id ORDER BY ss.stack_id, ss.position"):
    d = stack_info.setdefault(sid, {"py": False, "script_line": None, "script_func": None, "end": end})
    if kind == "python":
        d["py"] = True
        if file == me and d["script_line"] is None:
            d["script_line"] = line
            d["script_func"] = sym

rows = db.execute("SELECT ts_mono_ns, tid, stack_id FROM kernel_launches WHERE tgid = ?", (pid,)).fetchall()
n = len(rows)
with_py = sum(1 for _, _, s in rows if s in stack_info and stack_info[s]["py"])
with_script = sum(1 for _, _, s in rows if s in stack_info and stack_info[s]["script_line"] is not None)
main = [r for r in rows if r[1] == info["main_tid"]]
main_script = sum(1 for _, _, s in main if s in stack_info and stack_info[s]["script_line"] is not None)
ends = collections.Counter(stack_info[s]["end"] if s in stack_info else None for _, _, s in rows)
threads = collections.Counter(t for _, t, _ in rows)
# Launches of the other threads (PyTorch's autograd worker): whose frames
# they carry (stacks.python_thread, schema 22) and the script lines named.
try:
    pthread = dict(db.execute("SELECT id, python_thread FROM stacks").fetchall())
except sqlite3.OperationalError:
    pthread = {}
others = [r for r in rows if r[1] != info["main_tid"]]
others_script = collections.Counter(stack_info.get(s, {}).get("script_line") for _, _, s in others)
print(json.dumps({"other_thread_launches": len(others),
                  "other_thread_with_script_frame_pct": round(
                      100.0 * sum(v for k, v in others_script.items() if k is not None) / max(len(others), 1), 2),
                  "other_thread_python_thread": {str(k): v for k, v in collections.Counter(
                      pthread.get(s) for _, _, s in others).most_common()},
                  "other_thread_script_lines": {str(k): v for k, v in others_script.most_common(5)}}))
print(json.dumps({"mode": info["mode"], "launches": n, "with_python_frame": with_py,
                  "with_python_frame_pct": round(100.0 * with_py / max(n, 1), 2),
                  "with_script_frame_pct": round(100.0 * with_script / max(n, 1), 2),
                  "main_thread_launches": len(main),
                  "main_thread_with_script_frame_pct": round(100.0 * main_script / max(len(main), 1), 2),
                  "launches_by_thread": {str(k): v for k, v in threads.most_common()},
                  "python_end": {str(k): v for k, v in ends.most_common()}}))

lo, hi = info["window"]
win = [r for r in rows if lo <= r[0] <= hi]
g = collections.Counter()
stacks_by_line = collections.defaultdict(set)
for _, _, s in win:
    line = stack_info.get(s, {}).get("script_line")
    g[line] += 1
    stacks_by_line[line].add(s)
prof = {int(k): v for k, v in info["profiler_kernels_by_line"].items()}
# The Python thread's stacks (the autograd thread runs no Python: no script
# frame in gpuobs nor in any reference).
distinct = sorted({s for _, t, s in win if t == info["main_tid"]})
agree = sum(1 for s in distinct if stack_info.get(s, {}).get("script_line") in prof)
print(json.dumps({"window_launches": len(win), "profiler_kernels": sum(prof.values()),
                  "profiler_kernels_without_script_frame": info["profiler_kernels_without_script_frame"],
                  "distinct_launch_stacks": len(distinct), "stacks_whose_script_line_profiler_names": agree,
                  "agree_pct": round(100.0 * agree / max(len(distinct), 1), 2)}))
trace = {k: v for k, v in info.get("trace_launches_by_line", {}).items() if k != "error"}  # by function
disp = {int(k): v for k, v in info.get("dispatch_ops_by_line_one_step", {}).items() if k != "error"}
for name, d in (("trace", info.get("trace_launches_by_line")), ("dispatch", info.get("dispatch_ops_by_line_one_step"))):
    if isinstance(d, dict) and "error" in d:
        print(f"{name} reference failed: {d['error']}")
print(f"trace python_function events: {info.get('trace_python_function_events')}")
# A distinct launch stack agrees when its innermost script line is a line
# the reference names (trace: with launches; dispatch: with ops).
for name, ref, key in (("trace", trace, "script_func"), ("dispatch", disp, "script_line")):
    if ref:
        ok = sum(1 for s in distinct if stack_info.get(s, {}).get(key) in ref)
        print(json.dumps({"reference": name, "distinct_launch_stacks": len(distinct), "agree": ok,
                          "agree_pct": round(100.0 * ok / max(len(distinct), 1), 2)}))
print("script line | gpuobs launches (window) | profiler op kernels | dispatch ops (1 step)")
for line in sorted(set(g) | set(prof) | set(disp), key=lambda v: (v is None, v or 0)):
    print(f"{line} | {g.get(line, 0)} | {prof.get(line, 0)} | {disp.get(line, 0)}")
gf = collections.Counter(stack_info.get(s, {}).get("script_func") for _, t, s in win if t == info["main_tid"])
print("script function | gpuobs launches (window, Python thread) | trace launches (window)")
for f in sorted(set(gf) | set(trace), key=lambda v: (v is None, v or "")):
    print(f"{f} | {gf.get(f, 0)} | {trace.get(f, 0)}")
