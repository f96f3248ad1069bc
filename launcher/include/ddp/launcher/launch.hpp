#pragma once
// `ddprun [options] PROGRAM`: from the options to the finished job (docs/launcher.md). The
// context is gathered, MASTER_PORT reserved, the plan made and checked, the run directory
// created, and the job run, again after a failure under --max-restarts.

#include "ddp/common/run_layout.hpp"
#include "ddp/launcher/job.hpp"
#include "ddp/launcher/plan.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace ddp::launcher {

struct LaunchRequest {
  LaunchOptions options;
  JobSettings settings;
  int masterPort = 0;    // --master-port; 0: a free one, a new one per attempt
  std::string instance;  // --instance, decoded into settings.instance
  bool dryRun = false;   // --dry-run: print the plan to `out` and return
};

// Runs the request; returns ddprun's exit code. The dry-run plan and the profiler's report go
// to `out`, the live progress to `progress`, diagnostics to the "ddprun" logger. ConfigError
// for anything the user got wrong, before anything starts.
int launch(LaunchRequest request, std::ostream& out, std::ostream& progress);

// The run directory: made here (parents too), with its rank directories. A default name that
// another run took in the same second gets a suffix (-2, -3, ...); an explicit one that already
// holds a run (run.json) is refused (ConfigError). Returns the directory made.
std::string createRunDirectory(const std::string& dir, bool explicitDir, bool profiled);

// What mpirun (or srun) runs for each rank, before "-- PROGRAM": ddprun-worker when it sits
// beside the ddprun binary `self` (it starts faster: docs/launcher.md, "The worker binary"),
// else `self worker`.
std::vector<std::string> workerCommand(const std::string& self);

// Runs attempt 0, then 1, 2, ... while an attempt fails (not interrupted) and restarts are
// left (settings.maxRestarts). Before each restart the failed attempt's files are kept
// (RunLayout::keepAttempt) and recorded in settings.earlierAttempts. Returns the last exit code.
int runWithRestarts(const RunLayout& layout, JobSettings& settings,
                    const std::function<JobOutcome(int attempt)>& attempt);

}  // namespace ddp::launcher
