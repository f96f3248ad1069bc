#!/usr/bin/python3
"""A plain PyTorch DDP training script for the instrumentation-overhead benchmark
(bench/python-overhead.sh), written as for torchrun: env:// rendezvous over Gloo, a DataLoader over
a synthetic dataset, SGD. It times its own steps (time.perf_counter around each whole iteration,
data included), so the figure exists with and without ddprun's instrumentation, and the CPU time
its process used per step (all its threads: less sensitive than wall time to a noisy host);
rank 0 prints one JSON object with both.

usage: python_step.py MODEL STEPS   (MODEL: tiny | mlp | cnn; tiny: one linear layer, whose step is
so short that what the instrumentation adds to it shows in microseconds)"""
import json
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def model_of(name):
    if name == "tiny":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def synthetic_loader():
    """MNIST-shaped synthetic data, 32 a batch, this rank's share (after init_process_group)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    data = TensorDataset(torch.randn(8192, 1, 28, 28, generator=g), torch.randint(0, 10, (8192,), generator=g))
    return DataLoader(data, batch_size=32, sampler=DistributedSampler(data, seed=2))


def timed_step(model, optimizer, loader, batches):
    """One whole training iteration, the next batch included (the loader starts over at its end):
    its seconds, and the batch iterator to go on with."""
    start = time.perf_counter()
    try:
        x, y = next(batches)
    except StopIteration:
        batches = iter(loader)
        x, y = next(batches)
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    return time.perf_counter() - start, batches


def main():
    name, steps = sys.argv[1], int(sys.argv[2])
    dist.init_process_group("gloo")
    loader = synthetic_loader()
    model = DDP(model_of(name))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    times = []
    batches = iter(loader)
    cpu_start = None
    for i in range(steps):
        if i == 10:
            cpu_start = time.process_time()  # every thread of the process, after the warm-up
        seconds, batches = timed_step(model, optimizer, loader, batches)
        times.append(seconds)
    cpu_ms = 1000 * (time.process_time() - cpu_start) / (steps - 10)
    if dist.get_rank() == 0:
        print(json.dumps({"model": name, "steps": steps, "np": dist.get_world_size(),
                          "step_ms_median": 1000 * statistics.median(times[10:]), "cpu_ms_per_step": cpu_ms}))
    # The model (its reducer) goes before the process group: torch 2.13 otherwise aborts at exit
    # now and then ("terminate called without an active exception", 1 run in 6 here).
    del model, optimizer
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
