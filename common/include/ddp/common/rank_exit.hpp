#pragma once
// The exit record of a rank (docs/launcher.md, "Exit records"): ranks/rank-NNNNN.exit.json
// (RunLayout::rankExit), written by ddprun's worker when its program ends and rewritten by
// ddprun with its verdict; read by ddprun's supervisor and by the profiler.

#include "ddp/common/exit_status.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

inline constexpr int kRankExitSchemaVersion = 1;

// ddprun's verdict on a rank.
enum class RankStatus {
  kOk,          // succeeded
  kFailed,      // ended on its own with an error, not the first to
  kCulprit,     // the first rank to fail on its own
  kCollateral,  // stopped because another rank failed
  kStopped,     // stopped because ddprun was interrupted (Ctrl-C, SIGTERM)
  kHung,        // named by the hang watchdog (--timeout)
  kLost,        // left no record: never started, or its worker was killed
};
std::string_view rankStatusName(RankStatus status);  // "ok", "failed", "culprit", ...
std::optional<RankStatus> parseRankStatus(std::string_view name);

struct RankExitRecord {
  int rank = -1;
  std::string host;
  int64_t workerPid = -1, programPid = -1;
  bool started = false;  // the program was started
  std::optional<int> exitCode, signal;
  int64_t startUnixUs = 0, endUnixUs = 0;
  long peakRssKb = 0;
  bool stopRequested = false;        // it ended after being asked to stop (teardown, signal)
  std::optional<RankStatus> status;  // none until ddprun has judged the run

  ExitStatus exitStatus() const { return {exitCode, signal, peakRssKb}; }
  bool failed() const { return exitStatus().failed(); }
  bool failedOnItsOwn() const { return failed() && !stopRequested; }
  bool culprit() const { return status == RankStatus::kCulprit; }
  double durationSeconds() const { return endUnixUs > startUnixUs ? (endUnixUs - startUnixUs) / 1e6 : 0.0; }
};

nlohmann::json toJson(const RankExitRecord& record);
// ConfigError naming the field for a record that is not one (the caller names the file).
RankExitRecord rankExitFromJson(const nlohmann::json& json);

}  // namespace ddp
