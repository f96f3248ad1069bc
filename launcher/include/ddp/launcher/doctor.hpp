#pragma once
// `ddprun doctor`: the environment checks of the GPU guide as a pass / warn / fail table with
// the fix for each (docs/launcher.md): GPUs and driver, CUDA runtime vs driver, NCCL,
// LibTorch, Open MPI, network interfaces, RDMA devices, /dev/shm, the locked-memory limit,
// and a tiny allreduce per backend across 2 local ranks.

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {
class Environment;
}

namespace ddp::launcher {

enum class CheckStatus { kPass, kWarn, kFail, kInfo };
std::string_view checkStatusName(CheckStatus status);  // "pass", "warn", "fail", "info"

struct Check {
  std::string name;
  CheckStatus status = CheckStatus::kInfo;
  std::string detail;
  std::string fix;  // empty when there is nothing to do
};

// The table as printed: one block per check, the fix indented below it.
std::string renderChecks(const std::vector<Check>& checks);
// [{"name", "status", "detail", "fix"}, ...]
nlohmann::json checksJson(const std::vector<Check>& checks);

// The eRDMA checks for the erdma_* devices under `sys` (/sys in use: class/infiniband,
// class/net): what NCCL needs to use them (docs/launcher.md, "eRDMA"): NCCL_IB_HCA, NCCL_IB_DISABLE
// and NCCL_NET not turning them off, NCCL_SOCKET_IFNAME naming an interface, and the MTU Alibaba
// requires with NCCL's LL128 protocol (8500 with jumbo frames, 1400 without). None without them.
std::vector<Check> erdmaChecks(const std::string& sys, const Environment& environment);

struct DoctorOptions {
  bool json = false;      // --json
  bool allreduce = true;  // --no-allreduce turns the test allreduces off
  std::string instance;   // --instance: the instance type this machine should be
};

// Runs the checks and writes the table (or JSON) to out; 1 when a check failed, else 0.
// ConfigError for an unknown --instance.
int runDoctor(const DoctorOptions& options, std::ostream& out);

}  // namespace ddp::launcher
