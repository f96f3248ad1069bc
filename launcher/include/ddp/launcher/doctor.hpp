#pragma once
// `ddprun doctor`: the environment checks of the GPU guide as a pass / warn / fail table with
// the fix for each (docs/launcher.md): GPUs and driver, CUDA runtime vs driver, NCCL,
// LibTorch, Open MPI, network interfaces, RDMA devices, /dev/shm, the locked-memory limit,
// and a tiny allreduce per backend across 2 local ranks.

#include <string>
#include <vector>

namespace ddp::launcher {

struct Check {
  std::string name;
  std::string status;  // "pass", "warn", "fail" or "info"
  std::string detail;
  std::string fix;     // empty when there is nothing to do
};

// The table as printed: one block per check, the fix indented below it.
std::string renderChecks(const std::vector<Check>& checks);

// `ddprun doctor [--json] [--no-allreduce]`; exits 1 when a check failed, else 0.
int runDoctor(const std::vector<std::string>& args);

}  // namespace ddp::launcher
