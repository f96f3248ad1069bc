# Each rank trains its own model without DDP (an ensemble, or a forgotten wrapper).
import os

import torch
import torch.nn as nn

torch.manual_seed(int(os.environ.get("RANK", "0")))
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    optimizer.zero_grad()
    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    optimizer.step()
print(f"rank {os.environ.get('RANK')} loss {loss.item()!r}")
