# A Python rank that never imports torch (a preprocessing step run under ddprun).
import os

print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}: sum {sum(range(1000))}")
