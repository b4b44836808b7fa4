"""A training loop over three streams, for `gpuobs replay --execute` (issue
41): the default stream trains (forward, backward, SGD), a copy stream loads
the next batch from pinned memory while the step runs (the default stream
waits for its event), and a high-priority stream keeps an exponential moving
average of the weights after each step (it waits for the step's event); the
host reads the loss every 10th step (a sync).
usage: torch_streams_train.py [STEPS]
"""
import sys

import torch
from torch import nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
dev = "cuda"
model = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                      nn.Linear(2048, 1000)).to(dev)
params = list(model.parameters())
ema = [p.detach().clone() for p in params]
opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
copy_stream = torch.cuda.Stream()
ema_stream = torch.cuda.Stream(priority=-1)
host_x = [torch.randn(512, 1024).pin_memory() for _ in range(4)]
host_y = [torch.randint(0, 1000, (512,)).pin_memory() for _ in range(4)]


def load(i):
    with torch.cuda.stream(copy_stream):
        x = host_x[i % 4].to(dev, non_blocking=True)
        y = host_y[i % 4].to(dev, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record(copy_stream)
    return x, y, ready


nxt = load(0)
losses = []
for step in range(STEPS):
    x, y, ready = nxt
    torch.cuda.current_stream().wait_event(ready)
    x.record_stream(torch.cuda.current_stream())
    y.record_stream(torch.cuda.current_stream())
    nxt = load(step + 1)
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    done = torch.cuda.Event()
    done.record()
    with torch.cuda.stream(ema_stream):
        ema_stream.wait_event(done)
        torch._foreach_mul_(ema, 0.99)
        torch._foreach_add_(ema, [p.detach() for p in params], alpha=0.01)
    if step % 10 == 9:
        losses.append(loss.item())
torch.cuda.synchronize()
print(f"trained {STEPS} steps on 3 streams, loss {losses[-1]:.3f}")
