#pragma once
// run.json (RunLayout::manifest): what a run is and how it ended (docs/launcher.md, "run.json").
// ddprun writes it when the job starts (status "running") and again when it ends; the profiler
// reads it. Other writers may give only schema, np and command.

#include <nlohmann/json.hpp>

#include "ddp/common/rank_exit.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

inline constexpr int kRunManifestSchemaVersion = 1;

enum class RunStatus { kRunning, kSucceeded, kFailed, kHung, kInterrupted };
std::string_view runStatusName(RunStatus status);  // "running", "succeeded", ...
std::optional<RunStatus> parseRunStatus(std::string_view name);

struct ManifestHost {
  std::string host;
  int slots = 0;
};

// An attempt of a restarted job (--max-restarts) that failed; its files moved to `files`.
struct EarlierAttempt {
  int attempt = 0;
  int exitCode = 0;
  std::string reason;
  std::string files;                      // relative to the run directory: attempts/K
  int np = 0;                             // its ranks (0: not recorded)
  std::optional<std::string> lostHost{};  // the host it lost, when that was its failure
};

struct HangRecord {
  std::vector<int> ranks;
  int64_t detectedUnixUs = 0, stacksDoneUnixUs = 0;
};

// A rank as run.json lists it (its full record is ranks/rank-NNNNN.exit.json).
struct ManifestRank {
  int rank = 0;
  std::string host;
  int64_t pid = -1;
  RankStatus status = RankStatus::kLost;
  std::optional<int> exitCode, signal;
};

struct Versions {
  std::optional<std::string> ddprun, openmpi, libtorch, nccl;
  std::optional<bool> libtorchCuda;
};

struct RunManifest {
  // What the run is (the first write).
  std::string ddprunVersion;
  std::vector<std::string> command;                 // the program and its arguments
  std::vector<std::string> ddprunArgv, mpirunArgv;  // mpirunArgv: what started the ranks (mpirun or srun)
  std::string launcher = "mpirun";                  // "mpirun" or "srun" (ddprun --launcher)
  int np = 0;
  std::vector<ManifestHost> hosts;
  std::string launchHost, masterAddr;
  int masterPort = 0;
  std::string runDir;
  std::optional<std::string> backend;  // the program's --backend, when given
  int64_t startUnixUs = 0;
  int attempt = 0, maxRestarts = 0;
  std::vector<EarlierAttempt> earlierAttempts;
  // ddprun --instance as the profiler's instance catalog decodes it (docs/compare.md); its
  // fields are the catalog's, so it stays JSON here; null when not given.
  nlohmann::json instance;
  std::map<std::string, std::string> rankEnvironment, environment;  // secrets left out
  RunStatus status = RunStatus::kRunning;
  // How it ended (the last write).
  std::optional<int64_t> endUnixUs;
  std::optional<int> exitCode, culprit;
  std::optional<std::string> lostHost;  // a host whose ranks were all lost at once, the job's culprit
  std::optional<std::string> reason, mpirunExit;
  std::optional<HangRecord> hang;
  std::vector<ManifestRank> ranks;
  std::optional<Versions> versions;

  // instance["name"], when an instance was given.
  std::optional<std::string> instanceName() const;
};

nlohmann::json toJson(const RunManifest& manifest);
// run.json's "versions" object (also ddprun's cache of them).
nlohmann::json versionsJson(const Versions& versions);
Versions versionsFrom(const nlohmann::json& json);
// ConfigError naming the field for a manifest that is not one (the caller names the file).
RunManifest runManifestFromJson(const nlohmann::json& json);

}  // namespace ddp
