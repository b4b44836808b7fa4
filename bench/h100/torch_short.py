"""A short PyTorch process for issue 37: STEPS steps of a few tiny ops and a
matmul on the GPU, every CUDA call inside torch.profiler (CUPTI activity
records from before the first kernel), then exit. Prints one JSON line: the
process's pid and CUPTI's counts of kernels, memcpys and memsets, which
gpuobsd's capture of this process must equal.

usage: torch_short.py STEPS
"""
import json
import os
import sys

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    x = torch.ones(256, 256, device="cuda")
    w = torch.full((256, 256), 0.01, device="cuda")
    for _ in range(steps):
        y = torch.relu(x @ w + 1.0)
        x = y * 0.5
    total = float(x.sum().item())  # a DtoH copy and a sync
    torch.cuda.synchronize()

kernels = memcpy = memset = 0
for e in prof.events():
    if e.device_type != DeviceType.CUDA:
        continue
    name = e.name.lower()
    if name.startswith("memcpy"):
        memcpy += 1
    elif name.startswith("memset"):
        memset += 1
    else:
        kernels += 1
print(json.dumps({"pid": os.getpid(), "steps": steps, "kernels": kernels, "memcpy": memcpy, "memset": memset,
                  "sum": total}), flush=True)
