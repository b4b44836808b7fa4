"""A small transformer training loop (forward, backward on PyTorch's autograd
thread, AdamW), without torch.profiler: for `gpuobs record --gpu-time` and
`gpuobs replay --check` on a training step's kernels (issue 19).
usage: torch_train.py [STEPS]
"""
import sys

import torch
from torch import nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024, batch_first=True)
model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=4), nn.Linear(256, 1000)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(32, 128, 256, device="cuda")
y = torch.randint(0, 1000, (32, 128), device="cuda")
for step in range(STEPS):
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x).reshape(-1, 1000), y.reshape(-1))
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"trained {STEPS} steps, loss {loss.item():.3f}")
