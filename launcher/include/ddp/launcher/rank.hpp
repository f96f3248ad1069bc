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

// The variables the program gets: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK,
// GROUP_RANK, GROUP_WORLD_SIZE, and CUDA_VISIBLE_DEVICES = local rank modulo the GPUs when
// gpuCount > 0, binding is on and the user did not set it.
std::map<std::string, std::string> rankEnvironment(const RankIdentity& id, int nodeRank, int nodes,
                                                   const Environment& environment, int gpuCount, bool gpuBinding);

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
