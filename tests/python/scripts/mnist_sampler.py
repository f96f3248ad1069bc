# An MNIST-style DDP script written for torchrun: a small CNN, a DistributedSampler over a
# (synthetic, seeded) dataset, a DataLoader with worker processes, epochs with set_epoch, a StepLR
# schedule, evaluation under no_grad at the end of each epoch, logging every few batches.
# SLOW_RANK / SLOW_MS: that rank's dataset sleeps SLOW_MS per sample (a slow shard or disk).
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 5 * 5, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


class Digits(Dataset):
    def __init__(self, n, seed, slow_ms=0.0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 1, 28, 28, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.slow = slow_ms / 1000.0

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        if self.slow:
            time.sleep(self.slow)
        return self.x[i], self.y[i]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    dist.init_process_group(backend="gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    slow = float(os.environ.get("SLOW_MS", "0")) if os.environ.get("SLOW_RANK") == str(rank) else 0.0
    train_set = Digits(args.samples, seed=7, slow_ms=slow)
    test_set = Digits(args.samples // 4, seed=8)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=3)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers)
    test_loader = DataLoader(test_set, batch_size=256)
    model = DDP(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        model.train()
        sampler.set_epoch(epoch)
        for batch, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            if batch % args.log_interval == 0:
                print(f"rank {rank} epoch {epoch} batch {batch}/{len(loader)} loss {loss.item()!r}")
        scheduler.step()
        model.eval()
        correct, total = 0, 0
        with torch.no_grad():
            for data, target in test_loader:
                correct += (model(data).argmax(dim=1) == target).sum().item()
                total += len(target)
        print(f"rank {rank} epoch {epoch} test accuracy {correct}/{total}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
