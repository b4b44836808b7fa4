"""The cost of Python frames per launch (issue 18), without a GPU: a loop of
cuLaunchKernel calls into a libcuda (the fake one of tests/, or the real
one) through ctypes, DEPTH Python frames deep. Prints one JSON line with the
nanoseconds per launch. bench/python/run_launch_cost.sh times it with no
gpuobs, gpuobs --python-stacks off and gpuobs (Python frames on).
usage: launch_cost.py LIBCUDA [--iters N] [--depth D]
"""
import argparse
import ctypes
import json
import time

p = argparse.ArgumentParser()
p.add_argument("lib")
p.add_argument("--iters", type=int, default=200000)
p.add_argument("--depth", type=int, default=10)
p.add_argument("--linger", type=float, default=0, help="seconds to stay after the loop (bpf_cost.sh reads the probes' run times then)")
a = p.parse_args()
cuda = ctypes.CDLL(a.lib)
launch = cuda.cuLaunchKernel
launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3


def loop(n):
    for _ in range(n):
        launch(None, 1, 1, 1, 1, 1, 1, 0, None, None, None)


def nest(d, n):
    return loop(n) if d <= 1 else nest(d - 1, n)


nest(a.depth, 1000)  # warm up
t0 = time.perf_counter_ns()
nest(a.depth, a.iters)
dt = time.perf_counter_ns() - t0
print(json.dumps({"iters": a.iters, "depth": a.depth, "ns_per_launch": dt / a.iters}), flush=True)
time.sleep(a.linger)
