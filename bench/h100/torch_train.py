"""A small transformer training loop (forward, backward on PyTorch's autograd
thread, AdamW), without torch.profiler: for `gpuobs record --gpu-time` and
`gpuobs replay --check` on a training step's kernels (issue 19); with a
batch size and a host stall, for `gpuobs diff` and the idle-time reports
(issue 21).
usage: torch_train.py [STEPS] [BATCH] [STALL_MS]
  BATCH: sequences per step (default 32)
  STALL_MS: the host sleeps this long before every 10th step (a data loader
  that is late), after a sync: the GPU idles for at least that long
"""
import sys
import time

import torch
from torch import nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
BATCH = int(sys.argv[2]) if len(sys.argv) > 2 else 32
STALL_MS = float(sys.argv[3]) if len(sys.argv) > 3 else 0
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024, batch_first=True)
model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=4), nn.Linear(256, 1000)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(BATCH, 128, 256, device="cuda")
y = torch.randint(0, 1000, (BATCH, 128), device="cuda")
for step in range(STEPS):
    if STALL_MS and step % 10 == 9:
        torch.cuda.synchronize()
        time.sleep(STALL_MS / 1000)
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x).reshape(-1, 1000), y.reshape(-1))
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"trained {STEPS} steps, loss {loss.item():.3f}")
