#pragma once
// What a rank is (docs/launcher.md): its identity from Open MPI, Slurm or torchrun variables,
// the rank environment the program gets, where its output goes, and which rank failed first.
// Pure functions, unit-tested.

#include "ddp/common/environment.hpp"
#include "ddp/common/rank_exit.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

struct RankIdentity {
  int rank = 0, worldSize = 1, localRank = 0, localWorldSize = 1;
  std::optional<int> nodeRank;  // Slurm says it; under Open MPI ddprun's rendezvous does
};

// From OMPI_COMM_WORLD_*, else SLURM_* (a job step's task), else RANK/WORLD_SIZE/...;
// nullopt when none is set. ConfigError for a malformed value.
std::optional<RankIdentity> rankIdentityFrom(const Environment& environment);

// What the worker knows of the rank's host.
struct RankHost {
  int nodeRank = 0, nodes = 1;
  int gpuCount = 0;
  bool gpuBinding = true;
  int cpus = 1;           // the CPUs the rank may run on (the worker's affinity)
  std::string errorFile;  // TORCHELASTIC_ERROR_FILE: where torch's @record writes ("": not set)
};

// The variables the program gets (docs/world.md): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// NODE_RANK, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE; TORCHELASTIC_ERROR_FILE
// unless the user set it; OMP_NUM_THREADS = cpus / local ranks (at least 1) when ddprun's plan
// asks for it (DDPRUN_OMP_THREADS=auto) and the user did not set it; CUDA_VISIBLE_DEVICES = local
// rank modulo the GPUs when there are GPUs, binding is on and the user did not set it.
std::map<std::string, std::string> rankEnvironment(const RankIdentity& id, const RankHost& host,
                                                   const Environment& environment);

// Console output of the ranks: every line tagged "[host:rank] " (kTag), only one rank's
// lines (kRank), or none (kQuiet); the rank logs always get everything.
struct OutputMode {
  enum class Kind { kTag, kRank, kQuiet } kind = Kind::kTag;
  int rank = 0;
  bool shows(int r) const { return kind == Kind::kTag || (kind == Kind::kRank && r == rank); }
};
// "tag", "rank:N" or "quiet"; ConfigError naming `what` otherwise.
OutputMode parseOutputMode(const std::string& text, const std::string& what);

// The culprit among the records: the earliest to fail on its own (by end time, then rank);
// nullopt when none did.
std::optional<int> findCulprit(const std::vector<RankExitRecord>& records);

// Names that look like they hold a secret (TOKEN, KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL,
// AUTH, COOKIE, SESSION, PRIVATE, case-insensitive), never written to run.json.
bool looksSecret(const std::string& name);
std::map<std::string, std::string> withoutSecrets(const std::map<std::string, std::string, std::less<>>& vars);

}  // namespace ddp::launcher
