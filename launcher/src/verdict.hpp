#pragma once
// The end of a job: each rank's status, the culprit, the job's status and ddprun's exit code
// (docs/launcher.md, "Exit codes"). Pure, unit-tested.

#include "ddp/common/exit_status.hpp"
#include "ddp/common/rank_exit.hpp"
#include "ddp/common/run_manifest.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
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
  std::vector<std::pair<std::string, std::vector<int>>> placement;  // where the plan put the ranks (ranksByHost)
  // When no rank reached ddprun and mpirun failed: each host's probe (host_probe.hpp), "" where
  // mpirun could start a process alone, else what went wrong.
  std::map<std::string, std::string> probed;
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
  // Or a host none of whose ranks ever reached ddprun while other hosts' ranks did (hostNeverUp).
  std::optional<std::string> lostHost;
  std::vector<int> lostHostRanks;
  bool hostNeverUp = false;
  std::string neverUpProbe;  // what the host's probe said, when it was named by one
  RunStatus status = RunStatus::kSucceeded;
  int exitCode = 0;  // 128 + signal when interrupted, 124 for a hang, the culprit's shell code, 1 for a lost host, 1
                     // (or mpirun's) for lost ranks
};

Verdict judgeRanks(const VerdictInput& input);

// "rank(s) 0, 1 were stopped because of it (collateral, not at fault)"; "" when there are none.
std::string collateralLine(const Verdict& v);
// What ddprun says of a lost host (or one that never came up) and its collateral, then of the
// ranks lost elsewhere; launcherNote ("mpirun: exit code 205") is added to the latter.
std::vector<std::string> lostLines(const Verdict& v, const std::string& localHost, const std::string& launcher,
                                   const std::string& launcherNote);

}  // namespace ddp::launcher
