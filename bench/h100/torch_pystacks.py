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
           "profiler_kernels_without_script_frame": ops_without_stack}, open(OUT, "w"))
print(json.dumps({"mode": MODE, "steps": STEPS + PROFILED + 10, "profiled": PROFILED}), flush=True)
