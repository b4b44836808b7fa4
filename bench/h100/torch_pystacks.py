"""Issue 18's H100 workload: PyTorch launches from known Python lines, with a
torch.profiler(with_stack=True) window to compare Python call sites against.

  MODE tiny:  a loop of tiny elementwise ops from three functions (one
              kernel each), forward only.
  MODE train: a small transformer training step (forward, backward, AdamW).

Runs WARMUP steps, then PROFILED steps under torch.profiler (CPU + CUDA,
with_stack=True), then STEPS more. Writes OUT (JSON): the script's path, the
CLOCK_MONOTONIC window of the profiled steps (the clock of gpuobs's
ts_mono_ns), the main thread's native id, and per script line the kernels the
profiler attributes to it (the innermost frame of this file in the stack of
the CPU op that launched them).
usage: torch_pystacks.py MODE OUT [STEPS] [PROFILED]
"""
import json
import os
import sys
import threading
import time

import torch
from torch.profiler import ProfilerActivity, profile

MODE, OUT = sys.argv[1], sys.argv[2]
STEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 200
PROFILED = int(sys.argv[4]) if len(sys.argv) > 4 else 20
ME = os.path.abspath(__file__)

x = torch.zeros(64, device="cuda")


def scale(t):
    return t.mul_(1.0001)


def shift(t):
    return t.add_(1)


def clamp(t):
    return t.clamp_(max=1e6)


def tiny_step():
    scale(x)
    shift(x)
    clamp(x)


if MODE == "train":
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024, batch_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(1000, 256), torch.nn.TransformerEncoder(layer, num_layers=2),
                                torch.nn.Linear(256, 1000)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    xs = torch.randint(0, 1000, (8, 64), device="cuda")
    ys = torch.randint(0, 1000, (8, 64), device="cuda")


def train_step():
    opt.zero_grad(set_to_none=True)
    out = model(xs)
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, 1000), ys.reshape(-1))
    loss.backward()
    opt.step()


step = tiny_step if MODE == "tiny" else train_step
for _ in range(10):
    step()
torch.cuda.synchronize()

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
    t0 = time.monotonic_ns()
    for _ in range(PROFILED):
        step()
    torch.cuda.synchronize()
    t1 = time.monotonic_ns()

t2 = time.monotonic_ns()
for _ in range(STEPS):
    step()
torch.cuda.synchronize()
t3 = time.monotonic_ns()

# Reference 2, from the same profile's trace: each launch call
# (cuda_runtime / cuda_driver events) under the innermost python_function
# event of this file on its thread (what with_stack draws in Perfetto), by
# function (the trace names a function by its def line, not the call's).
trace_lines = {}
trace_python_events = 0
try:
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".json") as tf:
        prof.export_chrome_trace(tf.name)
        tr = json.load(open(tf.name))
    evs = tr.get("traceEvents", tr) if isinstance(tr, dict) else tr
    pyf = [e for e in evs if e.get("cat") == "python_function" and "dur" in e]
    trace_python_events = len(pyf)
    base = os.path.basename(ME) + "("
    mine = [e for e in pyf if base in e.get("name", "")]
    by_tid = {}
    for e in mine:
        by_tid.setdefault(e.get("tid"), []).append(e)
    for e in evs:
        if e.get("cat") not in ("cuda_runtime", "cuda_driver") or "Launch" not in e.get("name", ""):
            continue
        best = None
        for f in by_tid.get(e.get("tid"), []):
            if f["ts"] <= e["ts"] <= f["ts"] + f["dur"] and (best is None or f["ts"] >= best["ts"]):
                best = f
        if best is not None:
            # "path(LINE): func": LINE is the function's def line, so the
            # function is what can be compared with gpuobs's innermost frame.
            func = best["name"].split("): ", 1)[-1]
            trace_lines[func] = trace_lines.get(func, 0) + 1
except Exception as ex:  # the reference is optional: say why it is missing
    trace_lines = {"error": repr(ex)}

# Reference 3, without the profiler: every aten op dispatched from Python,
# attributed to the innermost frame of this file (TorchDispatchMode sees each
# op with the Python stack that called it). Counts ops, not kernels.
dispatch_lines = {}
try:
    import traceback
    from torch.utils._python_dispatch import TorchDispatchMode

    class Where(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            for fr in reversed(traceback.extract_stack()):
                if fr.filename == ME and fr.name != "__torch_dispatch__":
                    dispatch_lines[fr.lineno] = dispatch_lines.get(fr.lineno, 0) + 1
                    break
            return func(*args, **(kwargs or {}))

    with Where():
        step()
    torch.cuda.synchronize()
except Exception as ex:
    dispatch_lines = {"error": repr(ex)}

# Per script line: kernels launched by the CPU ops whose innermost frame of
# this file is that line.
lines = {}
ops_without_stack = 0
for e in prof.profiler.function_events:
    if e.device_type.name != "CPU" or not e.kernels:
        continue
    line = None
    for fr in e.stack or []:  # innermost first: "path(line): func"
        if fr.startswith(ME + "("):
            line = int(fr[len(ME) + 1:fr.index(")")])
            break
    if line is None:
        ops_without_stack += len(e.kernels)
        continue
    lines[line] = lines.get(line, 0) + len(e.kernels)
json.dump({"script": ME, "mode": MODE, "window": [t0, t1], "after": [t2, t3], "main_tid": threading.get_native_id(),
           "pid": os.getpid(), "profiled_steps": PROFILED, "profiler_kernels_by_line": lines,
           "profiler_kernels_without_script_frame": ops_without_stack,
           "trace_python_function_events": trace_python_events, "trace_launches_by_line": trace_lines,
           "dispatch_ops_by_line_one_step": dispatch_lines}, open(OUT, "w"))
print(json.dumps({"mode": MODE, "steps": STEPS + PROFILED + 10, "profiled": PROFILED}), flush=True)
