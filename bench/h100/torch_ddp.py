"""A small data-parallel training loop (DDP, NCCL backend) for torchrun
(issue 24): an MLP on random data, STEPS steps; DDP all-reduces the
gradients in buckets. Knobs (environment): LATE_RANK/LATE_EVERY/LATE_MS make
one rank sleep before every LATE_EVERY-th step (a straggler); STOP_RANK/
STOP_STEP make one rank SIGSTOP itself before that step (a hang: the others
block in their next collective). HIDDEN (4096) and BATCH (64) size the
model and the batch: larger ones make a longer, GPU-bound step. Rank 0
prints JSON: steps, seconds, the mean step time and the libnccl files
mapped."""
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
dist.init_process_group("nccl")
rank = dist.get_rank()
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
torch.cuda.set_device(dev)
torch.manual_seed(0)
hidden = int(os.environ.get("HIDDEN", "4096"))
batch = int(os.environ.get("BATCH", "64"))
model = torch.nn.Sequential(torch.nn.Linear(1024, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                            torch.nn.ReLU(), torch.nn.Linear(hidden, 1024)).to(dev)
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
x = torch.randn(batch, 1024, device=dev)
y = torch.randn(batch, 1024, device=dev)
late_rank = int(os.environ.get("LATE_RANK", "-1"))
late_every = int(os.environ.get("LATE_EVERY", "10"))
late_ms = float(os.environ.get("LATE_MS", "200"))
stop_rank = int(os.environ.get("STOP_RANK", "-1"))
stop_step = int(os.environ.get("STOP_STEP", "-1"))


def train_step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(ddp(x), y)
    loss.backward()
    opt.step()


for _ in range(5):  # warm-up: buckets built, kernels loaded
    train_step()
torch.cuda.synchronize()
dist.barrier()
t0 = time.time()
for step in range(steps):
    if rank == late_rank and step % late_every == late_every - 1:
        time.sleep(late_ms / 1000)
    if rank == stop_rank and step == stop_step:
        os.kill(os.getpid(), signal.SIGSTOP)
    train_step()
torch.cuda.synchronize()
secs = time.time() - t0
if rank == 0:
    maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libnccl" in l})
    print(json.dumps({"steps": steps, "seconds": round(secs, 3), "step_ms": round(1000 * secs / steps, 3),
                      "world": dist.get_world_size(), "hidden": hidden, "batch": batch, "nccl": maps}), flush=True)
dist.destroy_process_group()
