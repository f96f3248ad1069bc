# A small token model (embedding, a GRU-free stack of per-token MLP layers, mean pooling) trained
# with DDP as written for torchrun: env:// rendezvous, Gloo, a DataLoader over a synthetic corpus.
# The ways such jobs go wrong, each one switch, for the diagnosis scenarios:
#   --lengths MIN:MAX   each batch's sequence length drawn per rank and step (unbucketed NLP batches);
#                       default one fixed length
#   --read-ms MS        each sample a blocking read of MS milliseconds (a Dataset on slow storage),
#                       with --workers K DataLoader workers
#   SLOW_BACKWARD_RANK / SLOW_BACKWARD_SHARE: that rank does that share more work in backward (a
#                       gradient hook repeating the layer's matmul: a per-rank configuration difference)
# Unchanged by ddprun; it prints the loss every 50 steps.
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Corpus(Dataset):
    def __init__(self, size, vocab, lengths, read_ms, seed):
        self.size, self.vocab, self.lengths, self.read_ms, self.seed = size, vocab, lengths, read_ms, seed

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        if self.read_ms:
            time.sleep(self.read_ms / 1000)  # a blocking read
        g = torch.Generator().manual_seed(self.seed * 1000003 + i)
        return torch.randint(0, self.vocab, (self.lengths[1],), generator=g)


class TokenModel(nn.Module):
    def __init__(self, vocab, width, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))
        self.head = nn.Linear(width, 2)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = torch.relu(layer(x)) + x
        return self.head(x.mean(dim=1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lengths", default="64:64")
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--read-ms", type=float, default=0)
    p.add_argument("--workers", type=int, default=0)
    args = p.parse_args()
    lengths = tuple(int(v) for v in args.lengths.split(":"))
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TokenModel(1000, args.width, args.layers))
    slow_share = float(os.environ.get("SLOW_BACKWARD_SHARE", "0"))
    if os.environ.get("SLOW_BACKWARD_RANK") == str(rank) and slow_share > 0:
        # A layer's backward is about 2 B L W^2 multiply-adds; one W x W matmul is W^3.
        repeats = max(1, round(slow_share * 2 * args.batch_size * lengths[1] / args.width))
        weight = model.module.layers[0].weight

        def extra(grad):  # more work in backward on this rank alone
            for _ in range(repeats):
                torch.mm(grad, weight)
            return grad

        for layer in model.module.layers:
            layer.weight.register_hook(extra)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    corpus = Corpus(args.steps * args.batch_size, 1000, lengths, args.read_ms, rank)
    loader = DataLoader(corpus, batch_size=args.batch_size, num_workers=args.workers)
    draw = torch.Generator().manual_seed(7 + rank)
    for step, tokens in enumerate(loader):
        length = int(torch.randint(lengths[0], lengths[1] + 1, (1,), generator=draw))
        tokens = tokens[:, :length]
        optimizer.zero_grad()
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits, (tokens[:, 0] % 2))
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
