#pragma once
// Environment: an immutable snapshot of environment variables, passed by value into everything
// that reads configuration so tests inject their own and never call setenv.

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

// Names of every environment variable ddprun reads or sets, defined once (docs/world.md,
// docs/launcher.md).
namespace env {
// torchrun-style rank contract (docs/world.md)
inline constexpr std::string_view kRank = "RANK";
inline constexpr std::string_view kWorldSize = "WORLD_SIZE";
inline constexpr std::string_view kLocalRank = "LOCAL_RANK";
inline constexpr std::string_view kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr std::string_view kNodeRank = "NODE_RANK";
inline constexpr std::string_view kGroupRank = "GROUP_RANK";
inline constexpr std::string_view kGroupWorldSize = "GROUP_WORLD_SIZE";
inline constexpr std::string_view kMasterAddr = "MASTER_ADDR";
inline constexpr std::string_view kMasterPort = "MASTER_PORT";
// torchrun's wider contract (torch.distributed.elastic's local agent sets these)
inline constexpr std::string_view kRoleRank = "ROLE_RANK";
inline constexpr std::string_view kRoleName = "ROLE_NAME";
inline constexpr std::string_view kRoleWorldSize = "ROLE_WORLD_SIZE";
inline constexpr std::string_view kTorchelasticRunId = "TORCHELASTIC_RUN_ID";
inline constexpr std::string_view kTorchelasticRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr std::string_view kTorchelasticMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";
inline constexpr std::string_view kTorchelasticUseAgentStore = "TORCHELASTIC_USE_AGENT_STORE";
inline constexpr std::string_view kTorchelasticErrorFile = "TORCHELASTIC_ERROR_FILE";
inline constexpr std::string_view kTorchNcclAsyncErrorHandling = "TORCH_NCCL_ASYNC_ERROR_HANDLING";
// Python and OpenMP in a rank
inline constexpr std::string_view kPythonPath = "PYTHONPATH";
inline constexpr std::string_view kPythonUnbuffered = "PYTHONUNBUFFERED";
inline constexpr std::string_view kOmpNumThreads = "OMP_NUM_THREADS";
inline constexpr std::string_view kMallocMmapThreshold = "MALLOC_MMAP_THRESHOLD_";
inline constexpr std::string_view kMallocTrimThreshold = "MALLOC_TRIM_THRESHOLD_";
inline constexpr std::string_view kGlibcTunables = "GLIBC_TUNABLES";
// Open MPI
inline constexpr std::string_view kOmpiRank = "OMPI_COMM_WORLD_RANK";
inline constexpr std::string_view kOmpiSize = "OMPI_COMM_WORLD_SIZE";
inline constexpr std::string_view kOmpiLocalRank = "OMPI_COMM_WORLD_LOCAL_RANK";
inline constexpr std::string_view kOmpiLocalSize = "OMPI_COMM_WORLD_LOCAL_SIZE";
inline constexpr std::string_view kOmpiAllowRoot = "OMPI_ALLOW_RUN_AS_ROOT";
inline constexpr std::string_view kOmpiAllowRootConfirm = "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM";
inline constexpr std::string_view kOmpiAllowExitWithoutSync = "OMPI_MCA_orte_allowed_exit_without_sync";
// Slurm (an allocation, and a task of a job step)
inline constexpr std::string_view kSlurmJobId = "SLURM_JOB_ID";
inline constexpr std::string_view kSlurmJobNodelist = "SLURM_JOB_NODELIST";
inline constexpr std::string_view kSlurmNodelist = "SLURM_NODELIST";
inline constexpr std::string_view kSlurmProcId = "SLURM_PROCID";
inline constexpr std::string_view kSlurmNTasks = "SLURM_NTASKS";
inline constexpr std::string_view kSlurmNProcs = "SLURM_NPROCS";
inline constexpr std::string_view kSlurmLocalId = "SLURM_LOCALID";
inline constexpr std::string_view kSlurmNodeId = "SLURM_NODEID";
inline constexpr std::string_view kSlurmStepId = "SLURM_STEP_ID";
inline constexpr std::string_view kSlurmStepTasksPerNode = "SLURM_STEP_TASKS_PER_NODE";
inline constexpr std::string_view kSlurmTasksPerNode = "SLURM_TASKS_PER_NODE";
// NCCL and CUDA
inline constexpr std::string_view kNcclDebug = "NCCL_DEBUG";
inline constexpr std::string_view kNcclDebugSubsys = "NCCL_DEBUG_SUBSYS";
inline constexpr std::string_view kNcclDebugFile = "NCCL_DEBUG_FILE";
inline constexpr std::string_view kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
// The system
inline constexpr std::string_view kPath = "PATH";
inline constexpr std::string_view kTorchDir = "Torch_DIR";
// ddp::comm
inline constexpr std::string_view kGlooIfname = "DDP_GLOO_IFNAME";
inline constexpr std::string_view kMpiShmRanksPerHost = "DDP_MPI_SHM_RANKS_PER_HOST";
// ddprun: the rank contract's run directory and attempt
inline constexpr std::string_view kRunDir = "DDPRUN_RUN_DIR";
inline constexpr std::string_view kAttempt = "DDPRUN_ATTEMPT";  // 0, then 1, 2... under --max-restarts
// ddprun to its workers
inline constexpr std::string_view kControl = "DDPRUN_CONTROL";             // host:port of ddprun
inline constexpr std::string_view kControlToken = "DDPRUN_CONTROL_TOKEN";  // proves a worker is ours
inline constexpr std::string_view kOutput = "DDPRUN_OUTPUT";               // tag | rank:N | quiet
inline constexpr std::string_view kGraceSeconds = "DDPRUN_GRACE_S";        // SIGTERM → SIGKILL
inline constexpr std::string_view kGpuBinding = "DDPRUN_GPU_BINDING";      // local-rank | none
inline constexpr std::string_view kSampleMs = "DDPRUN_SAMPLE_MS";          // utilisation sampling interval
inline constexpr std::string_view kLogLevel = "DDPRUN_LOG_LEVEL";          // ddprun's --log-level, for the workers
inline constexpr std::string_view kOmpDefault = "DDPRUN_OMP_THREADS";      // "auto": the worker sets OMP_NUM_THREADS
// ddprun to Python ranks (python/ddprun)
inline constexpr std::string_view kInstrument = "DDPRUN_INSTRUMENT";  // 1: time PyTorch steps automatically
}  // namespace env

class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string, std::less<>> vars) : vars_(std::move(vars)) {}

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
