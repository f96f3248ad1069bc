# Forks its workers before it imports torch (a multiprocessing pool that prepares the data), the
# workers import torch themselves, and only then does the script import torch and train with DDP.
import multiprocessing


def prepare(i):
    import torch

    return float(torch.arange(i + 1.0).sum())


if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as pool:
        sums = pool.map(prepare, range(8))
    print("prepared", sums)

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(dist.get_rank())
    for step in range(30):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 16, generator=g)).pow(2).mean() + sums[step % 8] * 0
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item()!r}")
    dist.destroy_process_group()
