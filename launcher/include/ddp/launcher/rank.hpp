#pragma once
// What a rank is and what it leaves behind (docs/launcher.md): its identity from Open MPI,
// Slurm or torchrun variables, the rank environment the program gets, the exit record
// (ranks/rank-NNNNN.exit.json) and the one-line messages between ddprun and its workers.
// Pure functions, unit-tested.

#include "ddp/comm/environment.hpp"
#include "ddp/launcher/process.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

// ddprun's own variables, set by the launcher for its workers.
namespace env {
inline constexpr std::string_view kControl = "DDPRUN_CONTROL";              // host:port of ddprun
inline constexpr std::string_view kControlToken = "DDPRUN_CONTROL_TOKEN";   // proves a worker is ours
inline constexpr std::string_view kOutput = "DDPRUN_OUTPUT";                // tag | rank:N | quiet
inline constexpr std::string_view kGraceSeconds = "DDPRUN_GRACE_S";         // SIGTERM → SIGKILL
inline constexpr std::string_view kGpuBinding = "DDPRUN_GPU_BINDING";       // local-rank | none
inline constexpr std::string_view kSampleMs = "DDPRUN_SAMPLE_MS";           // utilisation sampling interval
inline constexpr std::string_view kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
}  // namespace env

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
                                                   const Environment& environment, int gpuCount,
                                                   bool gpuBinding);

// Console output of the ranks: every line tagged "[host:rank] " (kTag), only one rank's
// lines (kRank), or none (kQuiet); the rank logs always get everything.
struct OutputMode {
  enum Kind { kTag, kRank, kQuiet } kind = kTag;
  int rank = 0;
  bool shows(int r) const { return kind == kTag || (kind == kRank && r == rank); }
};
// "tag", "rank:N" or "quiet"; ConfigError naming `what` otherwise.
OutputMode parseOutputMode(const std::string& text, const std::string& what);

// ranks/rank-NNNNN.exit.json (schema 1; the profiler reads rank, host, exit_code, signal and
// culprit).
struct RankRecord {
  int rank = -1;
  std::string host;
  int64_t workerPid = -1, programPid = -1;
  bool started = false;                // the program was started
  std::optional<int> exitCode, signal;
  int64_t startUnixUs = 0, endUnixUs = 0;
  long peakRssKb = 0;
  bool stopRequested = false;          // it ended after being asked to stop (teardown, signal)
  // ddprun's verdict: "ok", "failed" (ended on its own with an error), "culprit" (the first
  // failure), "collateral" (stopped because of another rank or a signal), "lost" (no record).
  std::string status;
  ExitStatus exitStatus() const { return {exitCode, signal, peakRssKb}; }
  bool failed() const { return exitStatus().failed(); }
  bool failedOnItsOwn() const { return failed() && !stopRequested; }
};
nlohmann::json toJson(const RankRecord& record);
// ConfigError naming `what` for a record that is not one.
RankRecord rankRecordFromJson(const nlohmann::json& json, const std::string& what);
// "<runDir>/ranks/rank-00002.exit.json" and ".log".
std::string rankFile(const std::string& runDir, int rank, const std::string& suffix);
// <runDir>/util/rank-NNNNN.jsonl: the utilisation samples of a profiled run.
std::string utilisationPath(const std::string& runDir, int rank);

// The culprit among the records: the earliest to fail on its own (by end time, then rank);
// nullopt when none did.
std::optional<int> findCulprit(const std::vector<RankRecord>& records);

// Names that look like they hold a secret (TOKEN, KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL,
// AUTH, COOKIE, SESSION, PRIVATE, case-insensitive), never written to run.json.
bool looksSecret(const std::string& name);
std::map<std::string, std::string> withoutSecrets(const std::map<std::string, std::string, std::less<>>& vars);

// Control messages, one line each (no newline here):
//   worker → ddprun  "hello TOKEN RANK WORKER_PID HOST", "started PROGRAM_PID", "exit JSON"
//   ddprun → worker  "start NODE_RANK NODES", "terminate"
struct Hello {
  std::string token;
  int rank = -1;
  int64_t pid = -1;
  std::string host;
};
std::string formatHello(const Hello& hello);
std::optional<Hello> parseHello(const std::string& line);

}  // namespace ddp::launcher
