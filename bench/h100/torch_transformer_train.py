"""A small transformer training loop (the workload of issue 17's bytes-per-launch
figures): nn.TransformerEncoder + AdamW in eager mode. Kernel names are long
demangled templates (cuBLAS/cuDNN-free elementwise, softmax, layer norm,
GEMMs through cuLaunchKernelEx). Prints steps and seconds as JSON."""
import json
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024, batch_first=True)
model = torch.nn.Sequential(torch.nn.Embedding(1000, 256), torch.nn.TransformerEncoder(layer, num_layers=4),
                            torch.nn.Linear(256, 1000)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randint(0, 1000, (16, 128), device="cuda")
y = torch.randint(0, 1000, (16, 128), device="cuda")
t0 = time.time()
for step in range(steps):
    opt.zero_grad(set_to_none=True)
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, 1000), y.reshape(-1))
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(json.dumps({"steps": steps, "seconds": round(time.time() - t0, 3), "loss": round(loss.item(), 4)}))
