#pragma once
// Environment: an immutable snapshot of environment variables, passed by value into everything
// that reads configuration so tests inject their own and never call setenv.

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

// Names of every environment variable ddprun reads or sets, defined once.
namespace env {
// torchrun-style rank contract (docs/world.md)
inline constexpr std::string_view kRank = "RANK";
inline constexpr std::string_view kWorldSize = "WORLD_SIZE";
inline constexpr std::string_view kLocalRank = "LOCAL_RANK";
inline constexpr std::string_view kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr std::string_view kNodeRank = "NODE_RANK";
inline constexpr std::string_view kGroupRank = "GROUP_RANK";
inline constexpr std::string_view kMasterAddr = "MASTER_ADDR";
inline constexpr std::string_view kMasterPort = "MASTER_PORT";
// Open MPI
inline constexpr std::string_view kOmpiRank = "OMPI_COMM_WORLD_RANK";
inline constexpr std::string_view kOmpiSize = "OMPI_COMM_WORLD_SIZE";
inline constexpr std::string_view kOmpiLocalRank = "OMPI_COMM_WORLD_LOCAL_RANK";
inline constexpr std::string_view kOmpiLocalSize = "OMPI_COMM_WORLD_LOCAL_SIZE";
// Slurm (a task of a job step)
inline constexpr std::string_view kSlurmProcId = "SLURM_PROCID";
inline constexpr std::string_view kSlurmNTasks = "SLURM_NTASKS";
inline constexpr std::string_view kSlurmNProcs = "SLURM_NPROCS";
inline constexpr std::string_view kSlurmLocalId = "SLURM_LOCALID";
inline constexpr std::string_view kSlurmNodeId = "SLURM_NODEID";
inline constexpr std::string_view kSlurmStepId = "SLURM_STEP_ID";
inline constexpr std::string_view kSlurmStepTasksPerNode = "SLURM_STEP_TASKS_PER_NODE";
inline constexpr std::string_view kSlurmTasksPerNode = "SLURM_TASKS_PER_NODE";
// ddprun
inline constexpr std::string_view kGlooIfname = "DDP_GLOO_IFNAME";
inline constexpr std::string_view kMpiShmRanksPerHost = "DDP_MPI_SHM_RANKS_PER_HOST";
inline constexpr std::string_view kRunDir = "DDPRUN_RUN_DIR";
inline constexpr std::string_view kAttempt = "DDPRUN_ATTEMPT";  // 0, then 1, 2... under --max-restarts
}  // namespace env

class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string, std::less<>> vars)
      : vars_(std::move(vars)) {}

  // A snapshot of this process's environment.
  static Environment fromProcess();

  std::optional<std::string> get(std::string_view name) const;
  bool has(std::string_view name) const { return vars_.find(name) != vars_.end(); }

  // The variable parsed as a decimal integer in [min, max]; nullopt when unset.
  // Throws ConfigError naming the variable and its value when it is not such an integer.
  std::optional<long long> getInt(std::string_view name, long long min, long long max) const;

  const std::map<std::string, std::string, std::less<>>& all() const { return vars_; }

 private:
  std::map<std::string, std::string, std::less<>> vars_;
};

}  // namespace ddp
