# Computes DDP gradients and never steps an optimizer (a gradient-norm probe).
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(8, 2))
for step in range(5):
    model(torch.randn(4, 8)).sum().backward()
    print(f"rank {dist.get_rank()} grad norm {model.module.weight.grad.norm().item():.6f}")
dist.destroy_process_group()
