#pragma once
// World discovery: who am I among how many, from the launcher's environment (docs/world.md).

#include "ddp/common/environment.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace ddp::comm {

// Which launcher's variables described the world.
enum class WorldSource { kSingle, kOpenMpi, kSlurm, kTorchrun };

std::string_view worldSourceName(WorldSource source);

struct WorldInfo {
  int rank = 0;
  int size = 1;
  int localRank = 0;
  int localSize = 1;
  int nodeRank = 0;
  std::optional<std::string> masterAddr;
  std::optional<int> masterPort;
  WorldSource source = WorldSource::kSingle;

  // True when the processes were started by an MPI-aware launcher, so MPI_Init joins them.
  bool hasMpi() const { return source == WorldSource::kOpenMpi || source == WorldSource::kSlurm; }
};

// Reads the world from `environment`. Precedence and consistency rules are in docs/world.md.
// Throws ConfigError for partial, malformed or conflicting variables.
WorldInfo discoverWorld(const Environment& environment);

// Tasks on node `nodeId` from a Slurm tasks-per-node string such as "4(x2),3".
// Throws ConfigError when the string is malformed or has no entry for `nodeId`.
int slurmTasksOnNode(std::string_view tasksPerNode, int nodeId);

// True unless this process's environment names it a rank other than 0 (Open MPI or torchrun
// variables): the one process that reports errors every rank hits alike, before any set-up.
bool isFirstRankProcess();

}  // namespace ddp::comm
