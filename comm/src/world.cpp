#include "ddp/comm/world.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace ddp::comm {
namespace {

constexpr long long kMaxRanks = std::numeric_limits<int>::max();

// One launcher's view of the world, before the views are reconciled.
struct View {
  WorldSource source;
  std::string_view rankVar;
  std::string_view sizeVar;
  int rank;
  int size;
  std::optional<int> localRank;
  std::optional<int> localSize;
  std::optional<int> nodeRank;
};

// Both variables of a pair, or neither; anything else is a partial setting.
std::optional<std::pair<int, int>> readPair(const Environment& env, std::string_view rankVar,
                                            std::string_view sizeVar) {
  const auto rank = env.getInt(rankVar, 0, kMaxRanks - 1);
  const auto size = env.getInt(sizeVar, 1, kMaxRanks);
  if (!rank && !size) return std::nullopt;
  if (!rank || !size) {
    throw ConfigError(fmt::format("{} is set but {} is not: set both or neither", rank ? rankVar : sizeVar,
                                  rank ? sizeVar : rankVar));
  }
  if (*rank >= *size) {
    throw ConfigError(fmt::format("{}={} is not below {}={}", rankVar, *rank, sizeVar, *size));
  }
  return std::make_pair(static_cast<int>(*rank), static_cast<int>(*size));
}

std::optional<int> readInt(const Environment& env, std::string_view name, long long min) {
  const auto value = env.getInt(name, min, kMaxRanks);
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

std::optional<View> openMpiView(const Environment& env) {
  const auto pair = readPair(env, env::kOmpiRank, env::kOmpiSize);
  if (!pair) return std::nullopt;
  return View{WorldSource::kOpenMpi,
              env::kOmpiRank,
              env::kOmpiSize,
              pair->first,
              pair->second,
              readInt(env, env::kOmpiLocalRank, 0),
              readInt(env, env::kOmpiLocalSize, 1),
              std::nullopt};
}

// A Slurm world only inside a job step (srun): a batch script also has SLURM_PROCID=0 and the
// allocation's SLURM_NTASKS, and is not rank 0 of that many.
std::optional<View> slurmView(const Environment& env) {
  if (!env.has(env::kSlurmStepId)) return std::nullopt;
  const std::string_view sizeVar = env.has(env::kSlurmNTasks) ? env::kSlurmNTasks : env::kSlurmNProcs;
  const auto pair = readPair(env, env::kSlurmProcId, sizeVar);
  if (!pair) return std::nullopt;
  View view{WorldSource::kSlurm,
            env::kSlurmProcId,
            sizeVar,
            pair->first,
            pair->second,
            readInt(env, env::kSlurmLocalId, 0),
            std::nullopt,
            readInt(env, env::kSlurmNodeId, 0)};
  const auto perNode =
      env.get(env::kSlurmStepTasksPerNode) ? env.get(env::kSlurmStepTasksPerNode) : env.get(env::kSlurmTasksPerNode);
  if (perNode && view.nodeRank) view.localSize = slurmTasksOnNode(*perNode, *view.nodeRank);
  return view;
}

std::optional<View> torchrunView(const Environment& env) {
  const auto pair = readPair(env, env::kRank, env::kWorldSize);
  if (!pair) {
    for (auto name : {env::kLocalRank, env::kLocalWorldSize, env::kNodeRank}) {
      if (env.has(name)) {
        throw ConfigError(fmt::format("{} is set but {} and {} are not", name, env::kRank, env::kWorldSize));
      }
    }
    return std::nullopt;
  }
  auto nodeRank = readInt(env, env::kNodeRank, 0);
  const auto groupRank = readInt(env, env::kGroupRank, 0);
  if (nodeRank && groupRank && *nodeRank != *groupRank) {
    throw ConfigError(fmt::format("{}={} and {}={} disagree", env::kNodeRank, *nodeRank, env::kGroupRank, *groupRank));
  }
  return View{WorldSource::kTorchrun,
              env::kRank,
              env::kWorldSize,
              pair->first,
              pair->second,
              readInt(env, env::kLocalRank, 0),
              readInt(env, env::kLocalWorldSize, 1),
              nodeRank ? nodeRank : groupRank};
}

void requireAgree(const View& primary, const View& other) {
  if (primary.rank != other.rank || primary.size != other.size) {
    throw ConfigError(fmt::format("conflicting world: {}={} {}={} but {}={} {}={}", primary.rankVar, primary.rank,
                                  primary.sizeVar, primary.size, other.rankVar, other.rank, other.sizeVar, other.size));
  }
}

}  // namespace

std::string_view worldSourceName(WorldSource source) {
  switch (source) {
    case WorldSource::kSingle:
      return "single";
    case WorldSource::kOpenMpi:
      return "openmpi";
    case WorldSource::kSlurm:
      return "slurm";
    case WorldSource::kTorchrun:
      return "torchrun";
  }
  return "unknown";
}

int slurmTasksOnNode(std::string_view tasksPerNode, int nodeId) {
  const auto bad = [&]() {
    return ConfigError(fmt::format("malformed Slurm tasks-per-node value '{}'", tasksPerNode));
  };
  int node = 0;
  std::string_view rest = tasksPerNode;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    int tasks = 0;
    int repeat = 1;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), tasks);
    if (ec != std::errc() || tasks < 1) throw bad();
    std::string_view tail(end, static_cast<size_t>(item.data() + item.size() - end));
    if (!tail.empty()) {
      if (tail.size() < 4 || tail.substr(0, 2) != "(x" || tail.back() != ')') throw bad();
      auto [rend, rec] = std::from_chars(tail.data() + 2, tail.data() + tail.size() - 1, repeat);
      if (rec != std::errc() || rend != tail.data() + tail.size() - 1 || repeat < 1) throw bad();
    }
    if (nodeId < node + repeat) return tasks;
    node += repeat;
  }
  if (tasksPerNode.empty()) throw bad();
  throw ConfigError(fmt::format("Slurm tasks-per-node value '{}' has no entry for node {}", tasksPerNode, nodeId));
}

WorldInfo discoverWorld(const Environment& env) {
  const auto ompi = openMpiView(env);
  const auto slurm = ompi ? std::nullopt : slurmView(env);  // mpirun inside an allocation
  const auto torchrun = torchrunView(env);

  std::optional<View> primary = ompi ? ompi : slurm ? slurm : torchrun;
  WorldInfo world;
  if (primary) {
    if (torchrun && primary->source != WorldSource::kTorchrun) requireAgree(*primary, *torchrun);
    world.source = primary->source;
    world.rank = primary->rank;
    world.size = primary->size;
    // The contract variables ddprun sets fill what the launcher's own variables lack.
    const auto pick = [&](std::optional<int> View::*field) -> std::optional<int> {
      if ((*primary).*field) return (*primary).*field;
      if (torchrun && (*torchrun).*field) return (*torchrun).*field;
      return std::nullopt;
    };
    // Unknown local layout: assume one node, or the launcher's local size with ranks by node.
    const auto localRank = pick(&View::localRank);
    const auto localSize = pick(&View::localSize);
    world.localSize = localSize.value_or(world.size);
    world.localRank = localRank.value_or(world.rank % world.localSize);
    if (world.localRank >= world.localSize) {
      throw ConfigError(
          fmt::format("local rank {} is not below the local world size {}", world.localRank, world.localSize));
    }
    if (world.localSize > world.size) {
      throw ConfigError(fmt::format("local world size {} exceeds the world size {}", world.localSize, world.size));
    }
    world.nodeRank = pick(&View::nodeRank).value_or(world.rank / world.localSize);
  }

  const auto addr = env.get(env::kMasterAddr);
  const auto port = env.getInt(env::kMasterPort, 1, 65535);
  if (addr.has_value() != port.has_value()) {
    throw ConfigError(fmt::format("{} is set but {} is not: set both or neither",
                                  addr ? env::kMasterAddr : env::kMasterPort,
                                  addr ? env::kMasterPort : env::kMasterAddr));
  }
  if (addr && addr->empty()) throw ConfigError(fmt::format("{} is empty", env::kMasterAddr));
  world.masterAddr = addr;
  if (port) world.masterPort = static_cast<int>(*port);
  return world;
}

bool isFirstRankProcess() {
  auto environment = Environment::fromProcess();
  auto rank = environment.get(env::kOmpiRank);
  if (!rank) rank = environment.get(env::kRank);
  return !rank || *rank == "0";
}

}  // namespace ddp::comm
