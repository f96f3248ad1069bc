#pragma once
// Running a launch plan (docs/launcher.md): mpirun started through ProcessRunner in a process
// group of its own, the workers met over the control socket (control.hpp), the first failure
// found and the rest torn down, run.json and the exit records written, and ddprun's exit code
// chosen. Diagnostics go to the "ddprun" logger; the profiler's report (--profile) to `out`.

#include "ddp/common/run_manifest.hpp"
#include "ddp/launcher/plan.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace ddp::launcher {

struct JobSettings {
  double graceSeconds = 5;           // SIGTERM to SIGKILL, for every rank
  double startTimeoutSeconds = 120;  // every rank must reach ddprun within this
  double timeoutSeconds = 0;         // --timeout: no step completed anywhere for this long = a hang (0: off)
  bool profile = false;              // run the profiler on the run directory at the end, show live progress
  std::vector<std::string> command;  // ddprun's own argv, for run.json
  std::string mpirun;                // for the version in run.json
  int attempt = 0;                   // of --max-restarts: 0 first
  int maxRestarts = 0;
  int minNp = 0;  // --min-np: after a host is lost, restart on the hosts left when they hold this many ranks (0: never)
  std::vector<std::string> lostHosts;           // hosts lost in earlier attempts: later attempts run without them
  int np = 0;                                   // ranks of the next attempt once hosts were lost (0: as planned)
  std::vector<EarlierAttempt> earlierAttempts;  // for run.json
  nlohmann::json instance;                      // --instance, decoded (docs/compare.md); null when not given
};

struct JobOutcome {
  // 0 when every rank succeeded; the culprit's exit code (128 + signal for a signal); 128 + N
  // when ddprun itself was stopped by signal N; 124 for a hang (--timeout); 1 (or mpirun's code)
  // when ranks were lost.
  int exitCode = 0;
  bool interrupted = false;  // ddprun got SIGINT/SIGTERM/SIGHUP: no restart
  std::string summary;       // "rank 2 failed: exit code 7"
  int np = 0;                // ranks of the attempt
  // The host that was lost (the verdict's culprit), as the plan names it (-H, the hostfile, the
  // Slurm allocation), and the ranks the plan had placed on the others.
  std::optional<std::string> lostHost{};
  int ranksLeft = 0;
};

// controlFd: the listening socket whose port is in the plan's DDPRUN_CONTROL. The report of a
// profiled run goes to `out`; the live progress line to `progress` (a terminal or not).
JobOutcome runJob(const LaunchPlan& plan, int controlFd, const JobSettings& settings, std::ostream& out,
                  std::ostream& progress);

}  // namespace ddp::launcher
