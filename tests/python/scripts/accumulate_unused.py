# Gradient accumulation under no_sync, a model with a branch that some steps do not use
# (find_unused_parameters=True), Adam, the torchelastic error handler (@record), and the
# Kubeflow-style reads of torchrun's variables (a KeyError when a launcher leaves them out).
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.head = nn.Linear(64, 4)
        self.aux = nn.Linear(64, 4)  # used on odd micro-batches only

    def forward(self, x, use_aux):
        h = self.trunk(x)
        return self.head(h) + (self.aux(h) if use_aux else 0)


@record
def main():
    restarts = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    max_restarts = int(os.environ["TORCHELASTIC_MAX_RESTARTS"])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print(f"rank {rank}: torchelastic launched {dist.is_torchelastic_launched()}, restart {restarts} of {max_restarts}, "
          f"role {os.environ['ROLE_NAME']} {os.environ['ROLE_RANK']}/{os.environ['ROLE_WORLD_SIZE']}")
    torch.manual_seed(0)
    model = DDP(Branchy(), find_unused_parameters=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    accumulate = 4
    for step in range(int(os.environ.get("STEPS", "40"))):
        optimizer.zero_grad()
        for micro in range(accumulate):
            x = torch.randn(16, 32, generator=g)
            y = torch.randn(16, 4, generator=g)
            last = micro == accumulate - 1
            with model.no_sync() if not last else torch.enable_grad():
                loss = nn.functional.mse_loss(model(x, use_aux=step % 2 == 1), y) / accumulate
                loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item()!r}")
    if os.environ.get("FAIL_AT_END") == str(rank):
        raise RuntimeError(f"rank {rank} was told to fail (FAIL_AT_END)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
