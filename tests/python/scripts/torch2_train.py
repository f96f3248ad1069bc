# A training script written for torch 2, as its documentation shows each feature: env://
# rendezvous with no backend named (torch picks gloo for the CPU), and the features chosen with
# --feature, one or more:
#   compile      torch.compile(DDP(model)) (the DDP optimizer splits the graph per bucket)
#   bf16         forward and loss under torch.amp.autocast("cpu", dtype=torch.bfloat16)
#   scaler       torch.amp.GradScaler("cpu") around backward and step
#   static       DDP(static_graph=True)
#   bucket_view  DDP(gradient_as_bucket_view=True), zero_grad(set_to_none=False) as well
#   groups       two parameter groups with their own learning rates, and a second optimizer
#                (a scheduler's warm-up on the head) over the head's parameters
#   hooks        the script's own hooks: the optimizer's step pre- and post-hooks, a global step
#                post-hook, a forward hook on the model and a forward pre-hook on the head; each
#                counts its calls, printed at the end
# Every step prints the loss (repr: bitwise), so two runs' outputs compare byte for byte.
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.optimizer import register_optimizer_step_post_hook


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                  nn.Linear(512, 512), nn.ReLU())
        self.head = nn.Linear(512, 8)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--feature", action="append", default=[],
                        choices=["compile", "bf16", "scaler", "static", "bucket_view", "groups", "hooks"])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    features = set(args.feature)

    dist.init_process_group()  # no backend: gloo on the CPU
    rank = dist.get_rank()
    torch.manual_seed(0)
    ddp = DDP(Net(), bucket_cap_mb=1, static_graph="static" in features,
              gradient_as_bucket_view="bucket_view" in features)
    model = torch.compile(ddp) if "compile" in features else ddp
    head = [p for n, p in ddp.module.named_parameters() if n.startswith("head.")]
    body = [p for n, p in ddp.module.named_parameters() if not n.startswith("head.")]
    if "groups" in features:
        optimizers = [torch.optim.SGD([{"params": body, "lr": 0.01}, {"params": head[:1], "lr": 0.02}], momentum=0.9),
                      torch.optim.AdamW(head[1:], lr=1e-3)]
    else:
        optimizers = [torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)]
    scaler = torch.amp.GradScaler("cpu") if "scaler" in features else None
    calls = {"pre": 0, "post": 0, "global": 0, "forward": 0, "head": 0}

    def counter(name):
        def hook(*_args):
            calls[name] += 1
        return hook

    if "hooks" in features:
        optimizers[0].register_step_pre_hook(counter("pre"))
        optimizers[0].register_step_post_hook(counter("post"))
        register_optimizer_step_post_hook(counter("global"))
        ddp.register_forward_hook(counter("forward"))
        ddp.module.head.register_forward_pre_hook(counter("head"))
    generator = torch.Generator().manual_seed(1000 + rank)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(args.steps):
        x = torch.randn(args.batch, 32, generator=generator)
        y = torch.randint(0, 8, (args.batch,), generator=generator)
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none="bucket_view" not in features)
        with torch.amp.autocast("cpu", dtype=torch.bfloat16, enabled="bf16" in features):
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            for optimizer in optimizers:
                scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item()!r}")
    if "hooks" in features:
        print(f"rank {rank} hooks called: {calls}")
        assert all(n == args.steps for n in calls.values()), calls
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
