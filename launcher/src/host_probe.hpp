#pragma once
// Which host mpirun cannot start a process on, when a job failed before any rank reached ddprun:
// mpirun fails as a whole then (its daemon on one host could not start or call back), and its
// own message may name another host. Each host gets `mpirun -np 1 --host HOST:1 /bin/true` of
// its own, all at once; the hosts where that fails, while it works on another, never came up
// (docs/reliability.md, "Whole hosts").

#include "ddp/launcher/plan.hpp"
#include "verdict.hpp"

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace ddp::launcher {

// The longest the probes may take together; one still running then did not start there.
constexpr auto kHostProbeLimit = std::chrono::seconds(20);

// `mpirun -np 1 --host HOST:1 [--mpi-args] /bin/true`, through the plan's mpirun.
std::vector<std::string> hostProbeArgv(const LaunchPlan& plan, const std::string& host);

// Whether the job's end calls for the probes: mpirun failed under the mpirun launcher, with no
// rank that reached ddprun, on two hosts or more, neither interrupted nor hung.
bool needsHostProbe(const VerdictInput& in, const LaunchPlan& plan);

// Runs the probes at once (the environment mpirun had, output discarded): host → "" where the
// process started and ended well, else what went wrong ("exit code 1", "nothing started within
// 20 s").
std::map<std::string, std::string> probeHosts(const LaunchPlan& plan, std::chrono::milliseconds limit);

// probeHosts into in.probed when needsHostProbe, said first (the probes can take kHostProbeLimit).
void addHostProbes(VerdictInput& in, const LaunchPlan& plan);

}  // namespace ddp::launcher
