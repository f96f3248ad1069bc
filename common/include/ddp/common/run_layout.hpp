#pragma once
// RunLayout: every path of a run directory (docs/launcher.md, "The run directory"), the one
// place that spells them. Writers (ddprun, its workers, the step timers, the profiler's
// reports) and readers (the profiler, ddprun's heartbeat) all go through it.
//
//   run.json                      the manifest (RunManifest)
//   ranks/rank-NNNNN.log          the rank's stdout and stderr
//   ranks/rank-NNNNN.exit.json    its exit record (RankExitRecord)
//   ranks/rank-NNNNN.stacks.txt   its stacks when the hang watchdog took them
//   ranks/rank-NNNNN.error.json   TORCHELASTIC_ERROR_FILE: torch's @record writes a Python failure
//   timings/rank-NNNNN.jsonl      its step records (StepRecord), one per line
//   timings/rank-NNNNN.progress   "STEP PHASE" of the step under way (the heartbeat)
//   timings/rank-NNNNN.source.json  where its timings came from (TimingSource)
//   util/rank-NNNNN.jsonl         its utilisation samples (UtilSample), profiled runs
//   nccl/HOST.PID.log             NCCL_DEBUG output, profiled runs
//   attempts/K/                   attempt K's ranks/, timings/, util/ and nccl/ after a restart
//   ddpbench*.json                ddpbench --json results put beside the run
//   report.{txt,json,md,html}, trace.json   the profiler's reports

#include <string>
#include <string_view>
#include <vector>

namespace ddp {

enum class ReportFile { kText, kJson, kMarkdown, kHtml, kTrace };

class RunLayout {
 public:
  // The names of the parts, for messages and help texts (the paths come from the functions).
  static constexpr std::string_view kManifestName = "run.json";
  static constexpr std::string_view kRanksName = "ranks";
  static constexpr std::string_view kTimingsName = "timings";
  static constexpr std::string_view kUtilName = "util";
  static constexpr std::string_view kNcclName = "nccl";
  static constexpr std::string_view kAttemptsName = "attempts";
  // "run.json, timings/*.jsonl, ranks/*.exit.json or nccl/*.log": what makes a run directory.
  static std::string whatMarksARun();
  // "timings/*.jsonl"
  static std::string timingsPattern();

  explicit RunLayout(std::string root);
  const std::string& root() const { return root_; }

  std::string manifest() const;
  std::string ranksDir() const;
  std::string rankLog(int rank) const;
  std::string rankExit(int rank) const;
  std::string rankStacks(int rank) const;
  std::string rankError(int rank) const;
  std::string timingsDir() const;
  std::string timings(int rank) const;
  std::string progress(int rank) const;
  std::string timingsSource(int rank) const;
  std::string utilDir() const;
  std::string utilisation(int rank) const;
  std::string ncclDir() const;
  // NCCL_DEBUG_FILE: NCCL replaces %h with the host name and %p with the process id.
  std::string ncclDebugFile() const;
  std::string report(ReportFile file) const;

  // attempts/K, laid out like a run directory of its own (ranks/, timings/, util/, nccl/).
  RunLayout attempt(int k) const;
  // attempts/K relative to the root, as run.json records it.
  static std::string attemptRelative(int k);
  // The attempts kept, in ascending order.
  std::vector<int> attempts() const;

  // What the readers look for, each list sorted by path.
  bool hasManifest() const;
  std::vector<std::string> timingsFiles() const;
  std::vector<std::string> timingsSourceFiles() const;
  std::vector<std::string> exitFiles() const;
  std::vector<std::string> utilisationFiles() const;
  std::vector<std::string> ncclLogs() const;
  std::vector<std::string> benchResults() const;

  // Makes the directories ranks write into: ranks/ and timings/, and util/ and nccl/ when the
  // run is profiled. ConfigError naming the path when one cannot be made.
  void makeRankDirectories(bool profiled) const;
  // Moves this attempt's ranks/, timings/, util/ and nccl/ to attempts/K and makes them anew
  // for the next attempt; returns attemptRelative(k). Error naming what could not be moved.
  std::string keepAttempt(int k, bool profiled) const;

 private:
  std::string root_;
};

// The progress file beside a timings file: rank-NNNNN.jsonl -> rank-NNNNN.progress (a timings
// file a program chose itself with train --timings gets one too).
std::string progressPathFor(const std::string& timingsFile);

}  // namespace ddp
