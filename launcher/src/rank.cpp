#include "ddp/launcher/rank.hpp"

#include "ddp/comm/error.hpp"
#include "ddp/launcher/hosts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <sstream>
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
  id.localWorldSize = localSize ? static_cast<int>(e.getInt(*localSize, 1, 1 << 24).value_or(id.worldSize)) : id.worldSize;
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

std::map<std::string, std::string> rankEnvironment(const RankIdentity& id, int nodeRank, int nodes,
                                                   const Environment& environment, int gpuCount, bool gpuBinding) {
  using namespace ddp::env;
  std::map<std::string, std::string> out{
      {std::string(kRank), std::to_string(id.rank)},
      {std::string(kWorldSize), std::to_string(id.worldSize)},
      {std::string(kLocalRank), std::to_string(id.localRank)},
      {std::string(kLocalWorldSize), std::to_string(id.localWorldSize)},
      {std::string(kNodeRank), std::to_string(nodeRank)},
      {std::string(kGroupRank), std::to_string(nodeRank)},
      {"GROUP_WORLD_SIZE", std::to_string(nodes)},
  };
  if (gpuCount > 0 && gpuBinding && !environment.has(launcher::env::kCudaVisibleDevices))
    out[std::string(launcher::env::kCudaVisibleDevices)] = std::to_string(id.localRank % gpuCount);
  return out;
}

OutputMode parseOutputMode(const std::string& text, const std::string& what) {
  OutputMode m;
  if (text == "tag" || text.empty()) return m;
  if (text == "quiet") {
    m.kind = OutputMode::kQuiet;
    return m;
  }
  if (text.rfind("rank:", 0) == 0) {
    const std::string n = text.substr(5);
    if (!n.empty() && n.size() < 9 && std::all_of(n.begin(), n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      m.kind = OutputMode::kRank;
      m.rank = std::stoi(n);
      return m;
    }
  }
  throw ConfigError(fmt::format("{} '{}': expected tag, rank:N or quiet", what, text));
}

nlohmann::json toJson(const RankRecord& r) {
  nlohmann::json j{{"schema", 1},
                   {"rank", r.rank},
                   {"host", r.host},
                   {"worker_pid", r.workerPid},
                   {"pid", r.programPid},
                   {"started", r.started},
                   {"exit_code", r.exitCode ? nlohmann::json(*r.exitCode) : nlohmann::json(nullptr)},
                   {"signal", r.signal ? nlohmann::json(*r.signal) : nlohmann::json(nullptr)},
                   {"start_unix_us", r.startUnixUs},
                   {"end_unix_us", r.endUnixUs},
                   {"duration_s", r.endUnixUs > r.startUnixUs ? (r.endUnixUs - r.startUnixUs) / 1e6 : 0.0},
                   {"peak_rss_kb", r.peakRssKb},
                   {"stop_requested", r.stopRequested},
                   {"culprit", r.status == "culprit"}};
  if (!r.status.empty()) j["status"] = r.status;
  return j;
}

RankRecord rankRecordFromJson(const nlohmann::json& j, const std::string& what) {
  auto fail = [&](const std::string& why) { return ConfigError(fmt::format("{}: {}", what, why)); };
  if (!j.is_object()) throw fail("not a JSON object");
  RankRecord r;
  try {
    r.rank = j.at("rank").get<int>();
    r.host = j.value("host", "");
    r.workerPid = j.value("worker_pid", int64_t{-1});
    r.programPid = j.value("pid", int64_t{-1});
    r.started = j.value("started", false);
    if (j.contains("exit_code") && !j["exit_code"].is_null()) r.exitCode = j["exit_code"].get<int>();
    if (j.contains("signal") && !j["signal"].is_null()) r.signal = j["signal"].get<int>();
    r.startUnixUs = j.value("start_unix_us", int64_t{0});
    r.endUnixUs = j.value("end_unix_us", int64_t{0});
    r.peakRssKb = j.value("peak_rss_kb", 0L);
    r.stopRequested = j.value("stop_requested", false);
    r.status = j.value("status", "");
  } catch (const nlohmann::json::exception& e) {
    throw fail(e.what());
  }
  if (r.rank < 0) throw fail("\"rank\" is negative");
  return r;
}

std::string rankFile(const std::string& runDir, int rank, const std::string& suffix) {
  return fmt::format("{}/ranks/rank-{:05d}{}", runDir, rank, suffix);
}

std::string utilisationPath(const std::string& runDir, int rank) {
  return fmt::format("{}/util/rank-{:05d}.jsonl", runDir, rank);
}

std::optional<int> findCulprit(const std::vector<RankRecord>& records) {
  const RankRecord* first = nullptr;
  for (const auto& r : records)
    if (r.failedOnItsOwn() && (!first || std::tie(r.endUnixUs, r.rank) < std::tie(first->endUnixUs, first->rank)))
      first = &r;
  return first ? std::optional<int>(first->rank) : std::nullopt;
}

bool looksSecret(const std::string& name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE",
                           "SESSION", "PRIVATE"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

std::map<std::string, std::string> withoutSecrets(const std::map<std::string, std::string, std::less<>>& vars) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : vars)
    if (!looksSecret(k)) out[k] = v;
  return out;
}

std::string formatHello(const Hello& h) { return fmt::format("hello {} {} {} {}", h.token, h.rank, h.pid, h.host); }

std::optional<Hello> parseHello(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  Hello h;
  if (!(in >> word) || word != "hello" || !(in >> h.token >> h.rank >> h.pid >> h.host)) return std::nullopt;
  if (h.rank < 0 || h.pid <= 0) return std::nullopt;
  return h;
}

}  // namespace ddp::launcher
