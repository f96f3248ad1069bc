#include "host_probe.hpp"

#include "ddp/common/log.hpp"
#include "ddp/launcher/process.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>
#include <csignal>
#include <thread>

namespace ddp::launcher {

std::vector<std::string> hostProbeArgv(const LaunchPlan& plan, const std::string& host) {
  std::vector<std::string> a = {plan.argv.front(), "-np", "1", "--host", host + ":1"};
  a.insert(a.end(), plan.mpiArgs.begin(), plan.mpiArgs.end());
  a.push_back("/bin/true");
  return a;
}

bool needsHostProbe(const VerdictInput& in, const LaunchPlan& plan) {
  return plan.launcher == "mpirun" && !plan.argv.empty() && in.placement.size() >= 2 && in.known.empty() &&
         in.reported.empty() && in.hung.empty() && !in.interruptedBy && in.mpirun && in.mpirun->failed();
}

std::map<std::string, std::string> probeHosts(const LaunchPlan& plan, std::chrono::milliseconds limit) {
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  std::map<std::string, Process> running;
  std::map<std::string, std::string> out;
  for (const auto& h : plan.hosts) {
    if (running.count(h.host) || out.count(h.host)) continue;
    SpawnOptions spawn;
    spawn.argv = hostProbeArgv(plan, h.host);
    spawn.setEnv = plan.mpirunEnv;
    spawn.newProcessGroup = true;
    spawn.killWithParent = true;
    spawn.stdinFd = spawn.stdoutFd = spawn.stderrFd = devnull;
    try {
      running.emplace(h.host, Process::spawn(spawn));
    } catch (const std::exception& e) {
      out[h.host] = e.what();
    }
  }
  if (devnull >= 0) ::close(devnull);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      if (auto status = it->second.poll()) {
        out[it->first] = status->failed() ? status->describe() : "";
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    if (running.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (auto& [host, p] : running) {
        p.signalGroup(SIGKILL);
        p.wait();
        out[host] =
            fmt::format("nothing started within {} s", std::chrono::duration_cast<std::chrono::seconds>(limit).count());
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return out;
}

void addHostProbes(VerdictInput& in, const LaunchPlan& plan) {
  if (!needsHostProbe(in, plan)) return;
  log::get("ddprun")->info(
      "no rank reached ddprun before mpirun failed: starting a process on each host alone to find "
      "the one it cannot start on (at most {} s)",
      kHostProbeLimit.count());
  in.probed = probeHosts(plan, kHostProbeLimit);
}

}  // namespace ddp::launcher
