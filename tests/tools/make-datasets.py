#!/usr/bin/python3
"""make-datasets.py DIR: writes datasets in the standard file formats, with random pixels and
labels: DIR/mnist (IDX, 256 images) and DIR/cifar10 (the 5 binary training batches)."""
import os
import random
import struct
import sys

out = sys.argv[1]
rng = random.Random(7)
os.makedirs(f"{out}/mnist", exist_ok=True)
os.makedirs(f"{out}/cifar10", exist_ok=True)
n = 256
with open(f"{out}/mnist/train-images-idx3-ubyte", "wb") as f:
    f.write(struct.pack(">IIII", 2051, n, 28, 28) + rng.randbytes(n * 784))
with open(f"{out}/mnist/train-labels-idx1-ubyte", "wb") as f:
    f.write(struct.pack(">II", 2049, n) + bytes(rng.randrange(10) for _ in range(n)))
for i in range(1, 6):
    pixels = rng.randbytes(10000 * 3072)
    with open(f"{out}/cifar10/data_batch_{i}.bin", "wb") as f:
        f.write(b"".join(bytes([rng.randrange(10)]) + pixels[r * 3072:(r + 1) * 3072] for r in range(10000)))
