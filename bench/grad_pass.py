#!/usr/bin/python3
"""grad_pass.py N: N in-place multiplies of a buffer the size of bench/python_step.py's MLP
gradients (one intra-op thread), for bench/python-instructions.sh: the instruction count of
110 passes less that of 10 is 100 passes of the timing hook's gradient scaling."""
import sys

import torch

from python_step import model_of

torch.set_num_threads(1)
buffer = torch.randn(sum(p.numel() for p in model_of("mlp").parameters()))
for _ in range(int(sys.argv[1])):
    buffer.mul_(0.5)
print(buffer.numel())
