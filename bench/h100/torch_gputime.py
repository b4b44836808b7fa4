"""Issue 19 part 2's H100 workload: kernels of known, stable duration, for
comparing the GPU times gpuobs --gpu-time measures with torch.profiler's.

  none              the workload (run under gpuobs record --gpu-time)
  profile OUT       the same under torch.profiler (CUDA activity): per kernel
                    name, each occurrence's GPU ns, to OUT (JSON)
  tiny              the tiny-op loop timed (us_per_op), for the cost of --gpu-time
  tiny-profiled     the same under torch.profiler
usage: torch_gputime.py MODE [OUT]
"""
import json
import sys
import time

import torch

MODE = sys.argv[1]
a = torch.randn(4096, 4096, device="cuda")
b = torch.randn(4096, 4096, device="cuda")
x = torch.randn(64 * 1024 * 1024, device="cuda")
h = torch.randn(16 * 1024 * 1024, pin_memory=True)
torch.cuda.synchronize()


def work():
    for _ in range(50):
        torch.mm(a, b)            # one GEMM kernel each
        x.mul_(1.0001)            # one elementwise kernel each
    d = h.to("cuda", non_blocking=True)  # a 64 MiB HtoD copy
    d.zero_()                     # a memset or fill kernel
    torch.cuda.synchronize()


def tiny(n=20000):
    t = torch.zeros(64, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        t.add_(1)
    torch.cuda.synchronize()
    print(f"us_per_op {(time.perf_counter() - t0) / n * 1e6:.3f}")


work()  # warm up (autotuning, lazy module loads)
if MODE == "none":
    for _ in range(5):
        work()
elif MODE == "profile":
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            work()
    durations = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            durations.setdefault(e.name, []).append(int(round(e.device_time_total * 1000)))  # us -> ns
    json.dump(durations, open(sys.argv[2], "w"))
    print("profiled kernels:", len(durations))
elif MODE == "tiny":
    tiny()
elif MODE == "tiny-profiled":
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        tiny()
