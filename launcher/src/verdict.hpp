#pragma once
// The end of a job: each rank's status, the culprit, the job's status and ddprun's exit code
// (docs/launcher.md, "Exit codes"). Pure, unit-tested.

#include "ddp/common/exit_status.hpp"
#include "ddp/common/rank_exit.hpp"
#include "ddp/common/run_manifest.hpp"

#include <map>
#include <optional>
#include <vector>

namespace ddp::launcher {

struct VerdictInput {
  int np = 0;
  std::map<int, RankExitRecord> reported;  // the exit records the workers sent
  std::map<int, RankExitRecord> known;     // what ddprun knows of the others (host, pids from their hello)
  std::vector<int> hung;                   // the stalled ranks the hang watchdog named, first the culprit
  std::optional<int> interruptedBy;        // the signal that stopped ddprun
  std::optional<ExitStatus> mpirun;        // how mpirun ended
  std::map<int, int64_t> dropped;          // ranks whose worker's connection closed without an exit record, when (µs)
};

struct Verdict {
  std::map<int, RankExitRecord> records;  // every rank, with its status
  std::optional<int> culprit;             // the hung rank, else the first to fail on its own
  bool hang = false;
  std::vector<int> collateral;  // ranks ddprun stopped (after the culprit, or on Ctrl-C)
  std::vector<int> alsoFailed;  // ranks that failed by themselves after the culprit, each with its own code
  std::vector<int> lost;
  // A host whose ranks were all lost at once, before anything else failed: it died or its link went
  // down. It is the culprit then (culprit stays empty), and what failed after it is collateral.
  std::optional<std::string> lostHost;
  std::vector<int> lostHostRanks;
  RunStatus status = RunStatus::kSucceeded;
  int exitCode = 0;  // 128 + signal when interrupted, 124 for a hang, the culprit's shell code, 1 for a lost host, 1
                     // (or mpirun's) for lost ranks
};

Verdict judgeRanks(const VerdictInput& input);

}  // namespace ddp::launcher
