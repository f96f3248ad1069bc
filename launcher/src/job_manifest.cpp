#include "job_manifest.hpp"

#include "ddp/common/clock.hpp"
#include "ddp/common/environment.hpp"
#include "ddp/config.hpp"
#include "ddp/launcher/rank.hpp"
#include "ddp/profiler/run.hpp"
#include "probe.hpp"

namespace ddp::launcher {

RunManifest startManifest(const LaunchPlan& plan, const JobSettings& s, const std::string& localHost) {
  RunManifest m;
  m.ddprunVersion = DDP_VERSION;
  m.command = plan.program;
  m.ddprunArgv = s.command;
  m.mpirunArgv = plan.argv;
  m.launcher = plan.launcher;
  m.np = plan.np;
  for (const auto& h : plan.hosts) m.hosts.push_back({h.host, h.slots});
  m.launchHost = localHost;
  m.masterAddr = plan.masterAddr;
  m.masterPort = plan.masterPort;
  m.runDir = plan.runDir;
  m.backend = profiler::commandOption(plan.program, "--backend");
  m.startUnixUs = unixMicros();
  m.attempt = s.attempt;
  m.maxRestarts = s.maxRestarts;
  m.earlierAttempts = s.earlierAttempts;
  m.instance = s.instance;
  m.rankEnvironment = withoutSecrets({plan.rankEnv.begin(), plan.rankEnv.end()});
  m.environment = withoutSecrets(Environment::fromProcess().all());
  return m;
}

Versions probeVersions(const std::string& mpirun) {
  Versions v;
  v.ddprun = DDP_VERSION;
  v.openmpi = probe::openMpiVersion(mpirun);
  if (auto torch = probe::libtorch()) {
    v.libtorch = torch->version;
    v.libtorchCuda = torch->cuda;
  }
  v.nccl = probe::ncclVersion();
  return v;
}

}  // namespace ddp::launcher
