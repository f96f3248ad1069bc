#!/usr/bin/python3
"""What the automatic instrumentation costs a step, measured inside one process
(bench/python-overhead.sh runs it under `ddprun --profile`): two identical DDP models with their own
optimizers, one followed by the instrumentation and one not (the instrumentation switched off
while it trains, so it never gets the bucket hook), trained in alternating blocks of steps. Both
see the same host at the same minute, so the difference of their block medians is the
instrumentation's cost without the run-to-run drift of this machine; the switched-off wrappers
still run (a few attribute checks), so it is slightly low.

It also times the one cost the instrumentation adds in proportion to the model: a hook receives
DDP's bucket undivided (without a hook DDP divides while copying gradients into the bucket), so
the timing hook scales it, one more pass over the gradients.

usage: python_ab.py MODEL BLOCKS STEPS_PER_BLOCK; rank 0 prints one JSON object."""
import json
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from python_step import model_of, synthetic_loader, timed_step


def main():
    name, blocks, per_block = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    from ddprun import _state  # on the path under `ddprun --profile`

    state = _state.current()
    if state is None or not state.enabled:
        sys.exit("python_ab.py: run it under `ddprun --profile` with the instrumentation on")
    dist.init_process_group("gloo")
    loader = synthetic_loader()
    models = {}
    for timed in (True, False):
        model = DDP(model_of(name))
        models[timed] = (model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    medians = {True: [], False: []}
    batches = iter(loader)
    for block in range(blocks + 1):
        for timed in (True, False) if block % 2 else (False, True):
            state.enabled = timed
            model, optimizer = models[timed]
            times = []
            for _ in range(per_block):
                seconds, batches = timed_step(model, optimizer, loader, batches)
                times.append(seconds)
            if block:  # the first block of each is warm-up
                medians[timed].append(statistics.median(times))
    state.enabled = True
    added = [1e6 * (a - b) for a, b in zip(medians[True], medians[False])]
    grads = torch.cat([p.detach().reshape(-1) for p in models[True][0].parameters()])
    scale = []
    for _ in range(200):
        start = time.perf_counter()
        grads.mul_(1.0)
        scale.append(time.perf_counter() - start)
    if dist.get_rank() == 0:
        print(json.dumps({"model": name, "np": dist.get_world_size(), "blocks": blocks,
                          "step_us_off": 1e6 * statistics.median(medians[False]),
                          "step_us_on": 1e6 * statistics.median(medians[True]), "added_us": statistics.median(added),
                          "added_us_quartiles": statistics.quantiles(added, n=4)[::2],
                          "grad_bytes": grads.numel() * grads.element_size(),
                          "scale_pass_us": 1e6 * statistics.median(scale)}))
    models.clear()  # the models before the process group (bench/python_step.py)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
