#!/usr/bin/python3
"""The PyTorch peer of the DDP step benchmark: torch.nn.parallel.DistributedDataParallel from
Debian's python3-torch over Gloo, one thread per rank, the same models, batch, optimizer and
synthetic data shape as `train`. Prints one JSON object: the median step time of rank 0.

usage: torch_ddp_train.py MODEL NP BATCH STEPS [DEVICE]   (MODEL: mlp | resnet18; DEVICE: cpu | cuda)

With DEVICE cuda, rank r trains on GPU r over NCCL (the GPU check, tools/gpu-check.sh).
"""
import json
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Block(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = None
        if stride != 1 or cin != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for stage, planes in enumerate([64, 128, 256, 512]):
            for i in range(2):
                blocks.append(Block(cin, planes, 2 if stage > 0 and i == 0 else 1))
                cin = planes
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn1(self.conv1(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def worker(rank, nranks, port, model_name, batch, steps, device, out):
    torch.set_num_threads(1)
    cuda = device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=nranks)
    torch.manual_seed(rank)
    model = (Mlp() if model_name == "mlp" else ResNet18()).to(device)
    model = nn.parallel.DistributedDataParallel(model, device_ids=[rank] if cuda else None)
    shape = (batch, 1, 28, 28) if model_name == "mlp" else (batch, 3, 32, 32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(1000 + rank)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        x = torch.randn(shape, generator=generator).to(device)
        y = torch.randint(0, 10, (batch,), generator=generator).to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss.item()
        times.append((time.perf_counter() - start) * 1000)
    if rank == 0:
        out.put(statistics.median(times))
    dist.destroy_process_group()


def main():
    model_name, nranks, batch, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.spawn(worker, args=(nranks, port, model_name, batch, steps, device, out), nprocs=nranks)
    median = out.get()
    impl = "pytorch-ddp-nccl" if device == "cuda" else "pytorch-ddp-gloo"
    print(json.dumps({"impl": impl, "device": device, "torch": torch.__version__, "model": model_name, "np": nranks, "batch": batch,
                      "step_ms_median": median, "samples_per_s": nranks * batch * 1000 / median}))


if __name__ == "__main__":
    main()
