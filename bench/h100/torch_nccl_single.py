"""One-rank torch.distributed with the NCCL backend (issue 22 on one GPU):
N iterations of all_reduce, broadcast, all_gather_into_tensor,
reduce_scatter_tensor on cuda:0, then the process group destroyed. Prints the
truth as JSON: pid, the libnccl files this process maps (PyTorch's wheel
copy, not the system's), iterations and the tensor bytes."""
import json
import os
import sys

import torch
import torch.distributed as dist

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29531")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
t = torch.ones(1 << 18, device="cuda")  # 1 MiB of float32
out = torch.empty_like(t)
for _ in range(n):
    dist.all_reduce(t)
    dist.broadcast(t, 0)
    dist.all_gather_into_tensor(out, t)
    dist.reduce_scatter_tensor(out, t)
torch.cuda.synchronize()
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libnccl" in l})
print(json.dumps({"pid": os.getpid(), "nccl": maps, "iterations": n, "tensor_bytes": t.numel() * 4,
                  "torch": torch.__version__, "nccl_version": ".".join(map(str, torch.cuda.nccl.version())),
                  "current_stream": hex(torch.cuda.current_stream().cuda_stream)}))
dist.destroy_process_group()
