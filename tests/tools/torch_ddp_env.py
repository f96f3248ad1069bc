#!/usr/bin/python3
"""A plain PyTorch DDP program, as users write it for torchrun: init_process_group("gloo",
init_method="env://") from RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT. Trains a few steps and
checks that every rank ends with the same parameters; prints one line per rank."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x = torch.randn(16, 8, generator=torch.Generator().manual_seed(100 * rank + step))
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
gathered = [torch.zeros_like(flat) for _ in range(world)]
dist.all_gather(gathered, flat)
same = all(torch.equal(g, gathered[0]) for g in gathered)
print(f"torch-ddp rank {rank}/{world} local_rank {os.environ['LOCAL_RANK']} parameters identical: {same}", flush=True)
dist.destroy_process_group()
raise SystemExit(0 if same else 1)
