#include "ddp/launcher/launch.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"
#include "ddp/common/log.hpp"
#include "ddp/launcher/port.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/profiler/projection/instances.hpp"
#include "io.hpp"

#include <fmt/format.h>

#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

namespace ddp::launcher {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<spdlog::logger> logger() { return log::get("ddprun"); }

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// ddprun's Python package: installed beside the binary (PREFIX/share/ddprun/python), else the
// source tree's (a build that runs where it was built); "" when neither is there.
std::string pythonPackage(const std::string& self) {
  std::error_code ec;
  for (const fs::path& dir :
       {fs::path(self).parent_path().parent_path() / "share/ddprun/python", fs::path(DDP_SOURCE_PYTHON_DIR)})
    if (fs::is_regular_file(dir / "ddprun/__init__.py", ec) && fs::is_regular_file(dir / "boot/sitecustomize.py", ec))
      return fs::canonical(dir, ec).string();
  return "";
}

}  // namespace

std::vector<std::string> workerCommand(const std::string& self) {
  const auto lean = fs::path(self).parent_path() / "ddprun-worker";
  if (::access(lean.c_str(), X_OK) == 0) return {lean.string()};
  return {self, "worker"};
}

namespace {

// What the plan needs from this machine; the program resolved on PATH (ConfigError when it
// is not there), mpirun found, the hostfile read.
PlanContext gatherContext(LaunchOptions& o) {
  PlanContext ctx;
  ctx.environment = Environment::fromProcess();
  ctx.root = ::geteuid() == 0;
  ctx.localSlots = io::usableCpus();
  ctx.localHost = io::hostname();
  ctx.cwd = fs::current_path().string();
  ctx.timestamp = timestamp();
  if (o.program.empty()) throw ConfigError("no program to run (ddprun [options] [--] PROGRAM [ARGS...]; see --help)");
  o.program.front() = fs::absolute(resolveExecutable(o.program.front(), ctx.environment)).lexically_normal().string();
  try {
    ctx.mpirun = resolveExecutable("mpirun", ctx.environment);
  } catch (const ConfigError&) {
    if (o.launcher != "srun")
      throw ConfigError("mpirun not found on PATH: install Open MPI (apt-get install openmpi-bin)");
  }
  if (o.launcher == "srun") {
    try {
      ctx.srun = resolveExecutable("srun", ctx.environment);
    } catch (const ConfigError&) {
      throw ConfigError(
          "--launcher srun: srun not found on PATH: install Slurm's client (apt-get install slurm-client)");
    }
  }
  const auto self = fs::read_symlink("/proc/self/exe").string();
  ctx.worker = workerCommand(self);
  ctx.pythonDir = pythonPackage(self);
  if (!o.hostfile.empty()) {
    std::ifstream in(o.hostfile);
    if (!in) throw ConfigError(fmt::format("hostfile {}: cannot read: {}", o.hostfile, std::strerror(errno)));
    ctx.hostfileText.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return ctx;
}

void checkResolvable(const LaunchPlan& plan, const std::string& localHost, const std::string& source) {
  for (const auto& h : plan.hosts) {
    if (h.host == "localhost" || h.host == localHost) continue;
    in_addr address{};
    std::string why;
    if (!io::resolveIpv4(h.host, address, why))
      throw ConfigError(fmt::format("host '{}' (from {}): cannot be resolved: {}", h.host, source, why));
  }
}

std::string planDryRun(const LaunchPlan& plan) {
  return renderPlan(plan) +
         "# when it runs the job, ddprun also sets DDPRUN_CONTROL and DDPRUN_CONTROL_TOKEN (its control\n"
         "# connection: node ranks, exit records, teardown); without them, as printed, each worker runs\n"
         "# on its own and exits with its program's status\n";
}

}  // namespace

std::string createRunDirectory(const std::string& dir, bool explicitDir, bool profiled) {
  std::string chosen = dir;
  if (explicitDir) {
    if (RunLayout(dir).hasManifest())
      throw ConfigError(fmt::format("run directory {} already holds a run (run.json): choose another --run-dir", dir));
    makeDirectories(dir, "run directory");
  } else {
    makeDirectories(fs::path(dir).parent_path().string(), "run directory");
    for (int n = 1;; ++n) {
      chosen = n == 1 ? dir : fmt::format("{}-{}", dir, n);
      if (::mkdir(chosen.c_str(), 0755) == 0) break;
      if (errno != EEXIST || n > 1000)
        throw ConfigError(fmt::format("run directory {}: cannot create: {}", chosen, std::strerror(errno)));
    }
  }
  RunLayout(chosen).makeRankDirectories(profiled);
  return chosen;
}

namespace {

// After a host was lost: whether the next attempt may run on the hosts left (--min-np), said
// either way; settings then hold the hosts to leave out and the smaller world.
bool shrinkAfterLostHost(const JobOutcome& outcome, JobSettings& settings) {
  if (settings.minNp == 0 || outcome.ranksLeft < settings.minNp) {
    logger()->error(
        "not restarting: host {} was lost, and the hosts left hold {} of the {} ranks{}", *outcome.lostHost,
        outcome.ranksLeft, outcome.np,
        outcome.ranksLeft == 0 ? ""
        : settings.minNp == 0
            ? fmt::format("; to resume on them with a smaller world, allow it with --min-np {}", outcome.ranksLeft)
            : fmt::format(", fewer than --min-np {}", settings.minNp));
    return false;
  }
  settings.lostHosts.push_back(*outcome.lostHost);
  settings.np = outcome.ranksLeft;
  logger()->warn("host {} was lost: the job restarts on the hosts left with {} of its {} ranks (--min-np {})",
                 *outcome.lostHost, outcome.ranksLeft, outcome.np, settings.minNp);
  return true;
}

}  // namespace

int runWithRestarts(const RunLayout& layout, JobSettings& settings, const std::function<JobOutcome(int)>& attempt) {
  for (int k = 0;; ++k) {
    settings.attempt = k;
    const auto outcome = attempt(k);
    if (outcome.exitCode == 0 || outcome.interrupted || k >= settings.maxRestarts) return outcome.exitCode;
    if (outcome.lostHost && !shrinkAfterLostHost(outcome, settings)) return outcome.exitCode;
    const std::string kept = layout.keepAttempt(k, settings.profile);
    settings.earlierAttempts.push_back({k, outcome.exitCode, outcome.summary, kept, outcome.np, outcome.lostHost});
    logger()->warn("attempt {} of {} failed ({}); its logs are in {}; restarting the job (--max-restarts {})", k + 1,
                   settings.maxRestarts + 1, outcome.summary, kept, settings.maxRestarts);
  }
}

int launch(LaunchRequest r, std::ostream& out, std::ostream& progress) {
  auto& o = r.options;
  auto& settings = r.settings;
  if (!r.instance.empty()) settings.instance = profiler::toJson(profiler::decodeInstance(r.instance));
  settings.profile = o.profile;
  o.maxRestarts = settings.maxRestarts;
  PlanContext ctx = gatherContext(o);
  settings.mpirun = ctx.mpirun;
  auto masterPort = r.masterPort > 0 ? PortReservation(r.masterPort) : PortReservation();
  ctx.masterPort = masterPort.port();
  auto plan = makeLaunchPlan(o, ctx);
  checkResolvable(plan, ctx.localHost,
                  !o.hostList.empty()   ? "-H"
                  : !o.hostfile.empty() ? o.hostfile
                                        : "the Slurm allocation");
  if (settings.minNp > plan.np)
    throw ConfigError(fmt::format("--min-np {}: more than the job's {} ranks", settings.minNp, plan.np));
  if (settings.minNp > 0 && settings.maxRestarts == 0)
    throw ConfigError(fmt::format("--min-np {}: restarts on fewer hosts need --max-restarts N", settings.minNp));
  if (r.dryRun) {
    out << planDryRun(plan);
    return 0;
  }
  o.runDir = createRunDirectory(plan.runDir, !o.runDir.empty(), o.profile);  // a bad one fails before any note
  for (const auto& w : plan.warnings) logger()->warn("{}", w);
  for (const auto& n : plan.notes) logger()->info("{}", n);
  if (o.profile && o.instrument && ctx.pythonDir.empty())
    logger()->warn("ddprun's Python package is not installed beside it ({}): Python ranks get no step timings",
                   "share/ddprun/python");
  const bool local = plan.masterAddr == "127.0.0.1";
  return runWithRestarts(RunLayout(o.runDir), settings, [&](int attempt) {
    std::optional<PortReservation> freshPort;  // every attempt gets its own MASTER_PORT
    if (attempt > 0 && r.masterPort == 0) ctx.masterPort = freshPort.emplace().port();
    ctx.attempt = attempt;
    o.excludedHosts = settings.lostHosts;
    if (settings.np > 0) o.np = settings.np;
    const int controlFd = io::listenTcp(local ? "127.0.0.1" : "0.0.0.0", ctx.controlPort);
    ctx.controlToken = io::randomHex(16);
    plan = makeLaunchPlan(o, ctx);
    if (attempt == 0)
      logger()->info("{} ranks of {} on {}; run directory {}", plan.np, fs::path(o.program.front()).filename().string(),
                     plan.hosts.size() == 1 ? plan.hosts[0].host : fmt::format("{} hosts", plan.hosts.size()),
                     plan.runDir);
    auto outcome = runJob(plan, controlFd, settings, out, progress);
    ::close(controlFd);
    return outcome;
  });
}

}  // namespace ddp::launcher
