"""CUDA graphs for `gpuobs record --gpu-time` (issue 19): a captured graph of
a few kernels replayed REPLAYS times, with eager launches between the
replays (each graph's work must join its replay, not a neighbouring launch).
usage: torch_graph.py [REPLAYS]
"""
import sys

import torch

REPLAYS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
x = torch.randn(1024, 1024, device="cuda")
w = torch.randn(1024, 1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):  # warm up on a side stream, as capture requires
    for _ in range(3):
        y = torch.relu(x @ w) + 1
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = torch.relu(x @ w) + 1
for _ in range(REPLAYS):
    g.replay()
    x.mul_(0.999)  # an eager launch between replays
torch.cuda.synchronize()
print(f"replayed {REPLAYS} times")
