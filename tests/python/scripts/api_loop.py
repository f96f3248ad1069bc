# A loop the automatic instrumentation cannot follow — no DDP module: the gradients are averaged
# by hand with all_reduce — marked with ddprun's explicit API. Without ddprun (no DDPRUN_RUN_DIR)
# the marks do nothing, and the script runs the same.
import os

import ddprun
import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
g = torch.Generator().manual_seed(rank)
for step in range(int(os.environ.get("STEPS", "30"))):
    with ddprun.step(samples=16) as s:
        with ddprun.phase("data"):
            x, y = torch.randn(16, 32, generator=g), torch.randn(16, 1, generator=g)
        with ddprun.phase("forward"):
            loss = nn.functional.mse_loss(model(x), y)
        with ddprun.phase("backward"):
            optimizer.zero_grad()
            loss.backward()
        with ddprun.phase("comm_wait"):
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
        with ddprun.phase("optimizer"):
            optimizer.step()
        s.loss = loss.item()
    print(f"rank {rank} step {step} loss {loss.item()!r} timed {ddprun.active()}")
dist.destroy_process_group()
