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
p.add_argument("--linger", type=float, default=0,
               help="seconds to stay after printing (bench/python/bpf_cost.sh reads the probes' run times then)")
a = p.parse_args()

x = torch.zeros(1, device="cuda")
for _ in range(a.warmup):
    x.add_(1)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(a.iters):
    x.add_(1)
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(json.dumps({"pid": os.getpid(), "iters": a.iters, "warmup": a.warmup,
                  "us_per_op": dt / a.iters * 1e6, "value": x.item(),
                  "value_ok": x.item() == a.iters + a.warmup}), flush=True)
time.sleep(a.linger)
