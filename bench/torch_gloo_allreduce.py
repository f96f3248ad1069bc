#!/usr/bin/python3
"""The PyTorch peer of the allreduce benchmark: torch.distributed's Gloo allreduce (Debian's
python3-torch), timed like ddpbench (slowest rank's time per iteration). One JSON object per size.

usage: torch_gloo_allreduce.py NP MIN_BYTES MAX_BYTES FACTOR ITERS
"""
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, nranks, port, min_bytes, max_bytes, factor, iters):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=nranks)
    size = min_bytes
    while size <= max_bytes:
        tensor = torch.ones(size // 4, dtype=torch.float32)
        for _ in range(2):
            dist.all_reduce(tensor)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(tensor)
        us = torch.tensor([(time.perf_counter() - start) * 1e6 / iters], dtype=torch.float64)
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        if rank == 0:
            algbw = size / us.item() / 1e3
            print(json.dumps({"bytes": size, "time_us": round(us.item(), 2),
                              "busbw_gbps": round(algbw * 2 * (nranks - 1) / nranks, 4)}),
                  flush=True)
        size *= factor
    dist.destroy_process_group()


def main():
    nranks, min_bytes, max_bytes, factor, iters = (int(a) for a in sys.argv[1:6])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(nranks, port, min_bytes, max_bytes, factor, iters), nprocs=nranks)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
