#pragma once
// run.json as a job starts, and the versions ddprun probes while it runs (docs/launcher.md).

#include "ddp/common/run_manifest.hpp"
#include "ddp/launcher/job.hpp"
#include "ddp/launcher/plan.hpp"

#include <string>

namespace ddp::launcher {

// run.json as the job starts: what the run is.
RunManifest startManifest(const LaunchPlan& plan, const JobSettings& s, const std::string& localHost);
// ddprun's, Open MPI's (from `mpirun`), LibTorch's and NCCL's versions.
Versions probeVersions(const std::string& mpirun);

}  // namespace ddp::launcher
