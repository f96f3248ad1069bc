# A DDP script whose Dataset does a heavy per-sample transform in Python, loaded with the
# DataLoader's default num_workers=0: the training process waits for every batch.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Augmented(Dataset):
    def __init__(self, n):
        self.base = torch.randn(n, 64, generator=torch.Generator().manual_seed(5))

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        x = self.base[i]
        for _ in range(int(os.environ.get("TRANSFORM_ROUNDS", "40"))):  # an expensive augmentation
            x = torch.tanh(x * 1.01 + 0.01)
        return x, int(i % 3)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = Augmented(4096)
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data, seed=1))
    model = DDP(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"rank {dist.get_rank()} step {step} loss {loss.item()!r}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
