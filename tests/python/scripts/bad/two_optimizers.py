# One DDP model, two optimizers over its two halves (SGD for the body, Adam for the head).
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
model = DDP(net)
body = torch.optim.SGD(net[0].parameters(), lr=0.01)
head = torch.optim.Adam(net[2].parameters(), lr=0.001)
g = torch.Generator().manual_seed(dist.get_rank())
for step in range(20):
    body.zero_grad()
    head.zero_grad()
    loss = model(torch.randn(8, 16, generator=g)).pow(2).mean()
    loss.backward()
    body.step()
    head.step()
    print(f"rank {dist.get_rank()} step {step} loss {loss.item()!r}")
dist.destroy_process_group()
