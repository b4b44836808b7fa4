"""A launch-bound PyTorch loop: ITERS in-place adds on a one-element CUDA tensor.

Each x.add_(1) is exactly one cuLaunchKernel of the same elementwise kernel, so
a capture must hold WARMUP + ITERS launches of one function handle. Prints one
JSON line: pid, iterations, microseconds per op, and the final value as a check.
"""
import argparse
import json
import os
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=20000)
p.add_argument("--warmup", type=int, default=200)
p.add_argument("--profiler", choices=["none", "plain", "stack"], default="none",
               help="time the loop inside torch.profiler (CPU+CUDA activities; stack: with_stack=True): the peer")
p.add_argument("--matmul", type=int, default=0,
               help="N: each op is an NxN bf16 matmul (GPU-bound) instead of a one-element add")
p.add_argument("--linger", type=float, default=0,
               help="seconds to stay after printing (bench/python/bpf_cost.sh reads the probes' run times then)")
a = p.parse_args()

import contextlib

x = torch.zeros(1, device="cuda")
if a.matmul:
    m1 = torch.randn(a.matmul, a.matmul, device="cuda", dtype=torch.bfloat16)
    m2 = torch.randn(a.matmul, a.matmul, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(m1)
    op = lambda: torch.matmul(m1, m2, out=out)
else:
    op = lambda: x.add_(1)
for _ in range(a.warmup):
    op()
torch.cuda.synchronize()
ctx = contextlib.nullcontext()
if a.profiler != "none":
    from torch.profiler import ProfilerActivity, profile
    ctx = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=a.profiler == "stack")
with ctx:
    t0 = time.perf_counter()
    for _ in range(a.iters):
        op()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
ok = True if a.matmul else x.item() == a.iters + a.warmup
print(json.dumps({"pid": os.getpid(), "iters": a.iters, "warmup": a.warmup,
                  "us_per_op": dt / a.iters * 1e6, "value": x.item(),
                  "value_ok": ok}), flush=True)
time.sleep(a.linger)
