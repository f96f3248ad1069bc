# Two DDP models in one loop, each with its optimizer: a GAN's generator and discriminator.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
generator = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
discriminator = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)))
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
g = torch.Generator().manual_seed(dist.get_rank())
for step in range(20):
    real = torch.randn(16, 4, generator=g) + 2
    fake = generator(torch.randn(16, 8, generator=g))
    opt_d.zero_grad()
    d_loss = bce(discriminator(real), torch.ones(16, 1)) + bce(discriminator(fake.detach()), torch.zeros(16, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(discriminator(fake), torch.ones(16, 1))
    g_loss.backward()
    opt_g.step()
    print(f"rank {dist.get_rank()} step {step} d {d_loss.item()!r} g {g_loss.item()!r}")
dist.destroy_process_group()
