#include "ddp/launcher/rank.hpp"

#include "ddp/common/error.hpp"
#include "ddp/launcher/hosts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <tuple>

namespace ddp::launcher {
namespace {

// localSize: the variable holding the local world's size, when the scheme has one.
std::optional<RankIdentity> identityFrom(const Environment& e, std::string_view rank, std::string_view size,
                                         std::string_view localRank, std::optional<std::string_view> localSize) {
  auto r = e.getInt(rank, 0, 1 << 24);
  if (!r) return std::nullopt;
  RankIdentity id;
  id.rank = static_cast<int>(*r);
  id.worldSize = static_cast<int>(e.getInt(size, 1, 1 << 24).value_or(id.rank + 1));
  id.localRank = static_cast<int>(e.getInt(localRank, 0, 1 << 24).value_or(id.rank));
  id.localWorldSize =
      localSize ? static_cast<int>(e.getInt(*localSize, 1, 1 << 24).value_or(id.worldSize)) : id.worldSize;
  if (id.rank >= id.worldSize)
    throw ConfigError(fmt::format("{}={} is not below {}={}", rank, id.rank, size, id.worldSize));
  return id;
}

}  // namespace

std::optional<RankIdentity> rankIdentityFrom(const Environment& e) {
  using namespace ddp::env;
  if (auto id = identityFrom(e, kOmpiRank, kOmpiSize, kOmpiLocalRank, kOmpiLocalSize)) return id;
  if (auto id = identityFrom(e, kSlurmProcId, kSlurmNTasks, kSlurmLocalId, std::nullopt)) {
    if (auto tasks = e.get(kSlurmStepTasksPerNode)) {
      // The local world is this node's share: SLURM_STEP_TASKS_PER_NODE at this node's index.
      auto node = e.getInt(kSlurmNodeId, 0, 1 << 20).value_or(0);
      const auto counts = expandSlurmTasksPerNode(*tasks);
      if (node < static_cast<long long>(counts.size())) id->localWorldSize = counts[static_cast<size_t>(node)];
    }
    id->nodeRank = static_cast<int>(e.getInt(kSlurmNodeId, 0, 1 << 20).value_or(0));
    return id;
  }
  if (auto id = identityFrom(e, kRank, kWorldSize, kLocalRank, kLocalWorldSize)) {
    if (auto node = e.getInt(kNodeRank, 0, 1 << 20)) id->nodeRank = static_cast<int>(*node);
    return id;
  }
  return std::nullopt;
}

std::map<std::string, std::string> rankEnvironment(const RankIdentity& id, const RankHost& host,
                                                   const Environment& environment) {
  using namespace ddp::env;
  std::map<std::string, std::string> out{
      {std::string(kRank), std::to_string(id.rank)},
      {std::string(kWorldSize), std::to_string(id.worldSize)},
      {std::string(kLocalRank), std::to_string(id.localRank)},
      {std::string(kLocalWorldSize), std::to_string(id.localWorldSize)},
      {std::string(kNodeRank), std::to_string(host.nodeRank)},
      {std::string(kGroupRank), std::to_string(host.nodeRank)},
      {std::string(kGroupWorldSize), std::to_string(host.nodes)},
      {std::string(kRoleRank), std::to_string(id.rank)},
      {std::string(kRoleWorldSize), std::to_string(id.worldSize)},
  };
  if (!host.errorFile.empty() && !environment.has(kTorchelasticErrorFile))
    out[std::string(kTorchelasticErrorFile)] = host.errorFile;
  if (environment.get(kOmpDefault) == std::optional<std::string>("auto") && !environment.has(kOmpNumThreads))
    out[std::string(kOmpNumThreads)] = std::to_string(std::max(1, host.cpus / std::max(1, id.localWorldSize)));
  if (host.gpuCount > 0 && host.gpuBinding && !environment.has(kCudaVisibleDevices))
    out[std::string(kCudaVisibleDevices)] = std::to_string(id.localRank % host.gpuCount);
  return out;
}

OutputMode parseOutputMode(const std::string& text, const std::string& what) {
  OutputMode m;
  if (text == "tag" || text.empty()) return m;
  if (text == "quiet") {
    m.kind = OutputMode::Kind::kQuiet;
    return m;
  }
  if (text.rfind("rank:", 0) == 0) {
    const std::string n = text.substr(5);
    if (!n.empty() && n.size() < 9 &&
        std::all_of(n.begin(), n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      m.kind = OutputMode::Kind::kRank;
      m.rank = std::stoi(n);
      return m;
    }
  }
  throw ConfigError(fmt::format("{} '{}': expected tag, rank:N or quiet", what, text));
}

std::optional<int> findCulprit(const std::vector<RankExitRecord>& records) {
  const RankExitRecord* first = nullptr;
  for (const auto& r : records)
    if (r.failedOnItsOwn() && (!first || std::tie(r.endUnixUs, r.rank) < std::tie(first->endUnixUs, first->rank)))
      first = &r;
  return first ? std::optional<int>(first->rank) : std::nullopt;
}

bool looksSecret(const std::string& name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word :
       {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

std::map<std::string, std::string> withoutSecrets(const std::map<std::string, std::string, std::less<>>& vars) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : vars)
    if (!looksSecret(k)) out[k] = v;
  return out;
}

}  // namespace ddp::launcher
