# The PyTorch DDP tutorial's toy model, as written for torchrun: env:// rendezvous, the rank from
# the environment, SGD on random data, the loss printed every step. Unchanged by ddprun.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print(f"Start running basic DDP example on rank {rank}.")
    torch.manual_seed(0)
    model = ToyModel()
    ddp_model = DDP(model)
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    generator = torch.Generator().manual_seed(1000 + rank)
    for step in range(int(os.environ.get("TOY_STEPS", "50"))):
        optimizer.zero_grad()
        outputs = ddp_model(torch.randn(20, 10, generator=generator))
        labels = torch.randn(20, 5, generator=generator)
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item()!r}")
    dist.destroy_process_group()
    print(f"Finished running basic DDP example on rank {rank}.")


if __name__ == "__main__":
    demo_basic()
