# Fails before it builds its DDP model: the job fails as it would without ddprun's instrumentation.
import torch.distributed as dist

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} starting")
raise ValueError("the config file says batch_size=-1")
