"""Issue 19's H100 workload: phases whose GPU behaviour is known, for
checking the GPU metrics gpuobs samples against nvidia-smi in the same run.

  matmul   bf16 8192x8192 matrix products (tensor cores busy, utilization ~100%)
  idle     the process sleeps (utilization 0)
  stream   fp32 elementwise over 1 GiB tensors (DRAM bandwidth bound)

Writes OUT (JSON): each phase's CLOCK_MONOTONIC window (the clock of
gpuobs's ts_mono_ns) and this process's pid.
usage: torch_busy.py OUT [SECONDS_PER_PHASE]
"""
import json
import os
import sys
import time

import torch

OUT = sys.argv[1]
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
phases = []


def phase(name, body):
    torch.cuda.synchronize()
    start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    end_by = time.monotonic() + SECONDS
    while time.monotonic() < end_by:
        body()
    torch.cuda.synchronize()
    phases.append({"name": name, "start_mono_ns": start, "end_mono_ns": time.clock_gettime_ns(time.CLOCK_MONOTONIC)})


a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
x = torch.randn(256 * 1024 * 1024, device="cuda")  # 1 GiB of fp32
y = torch.empty_like(x)
torch.cuda.synchronize()
time.sleep(1.0)  # the sampler sees the allocation settle first


def matmul():
    for _ in range(8):
        torch.mm(a, b)
    torch.cuda.synchronize()


def idle():
    time.sleep(0.05)


def stream():
    for _ in range(8):
        torch.mul(x, 1.0001, out=y)
    torch.cuda.synchronize()


phase("matmul", matmul)
phase("idle", idle)
phase("stream", stream)
with open(OUT, "w") as f:
    json.dump({"pid": os.getpid(), "phases": phases}, f)
print("phases:", ", ".join(f"{p['name']} {(p['end_mono_ns'] - p['start_mono_ns']) / 1e9:.2f} s" for p in phases))
