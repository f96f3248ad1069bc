// ddprun: start a data-parallel job on many ranks through mpirun, with a rank environment that
// torchrun-style programs understand, per-rank logs, failure reports that name the culprit,
// and a profile at the end (docs/launcher.md).
// Examples: ddprun -np 4 train --model resnet18 --steps 100
//           ddprun --profile -H node1:8,node2:8 ./train
//           ddprun doctor
#include "ddp/comm/error.hpp"
#include "ddp/config.hpp"
#include "ddp/launcher/doctor.hpp"
#include "ddp/launcher/job.hpp"
#include "ddp/launcher/plan.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/launcher/worker.hpp"
#include "ddp/profiler/instances.hpp"
#include "../../src/io.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>
#include <netdb.h>
#include <netinet/in.h>
#include <optional>
#include <sched.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace ddp::launcher;
namespace fs = std::filesystem;

// Options that take a value, so the scan below knows where PROGRAM starts.
const std::set<std::string> kWithValue = {"-np", "--np", "-n", "-H", "--host", "--hostfile", "--nproc-per-node",
                                          "--run-dir", "--nccl-debug", "--nccl-subsys", "-x", "--mpi-args", "--output",
                                          "--grace", "--log-level", "--start-timeout", "--max-restarts", "--timeout",
                                          "--master-port", "--instance"};

const std::set<std::string> kFlags = {"--profile", "--oversubscribe", "--no-gpu-binding", "--dry-run", "--version", "-h", "--help"};

// mpirun spells it "-np"; CLI11 wants "--np". Only ddprun's own options are rewritten, never
// the program's; an unknown option before PROGRAM is an error, not a program name.
std::vector<std::string> normalise(std::vector<std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--" || a.empty() || a[0] != '-') break;
    const std::string name = a.substr(0, a.find('='));
    if (!kWithValue.count(name) && !kFlags.count(name))
      throw ddp::ConfigError(fmt::format("unknown option '{}' (see ddprun --help; put -- before a program that starts with '-')", a));
    if (a == "-np") args[i] = "--np";
    if (kWithValue.count(a)) ++i;
  }
  return args;
}

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// A free TCP port for MASTER_PORT, held by a lock file for the whole run so that two ddprun
// runs on one host never pick the same one.
class PortReservation {
 public:
  // A port the user chose (--master-port): it must be free, and no other ddprun may hold it.
  explicit PortReservation(int wanted) {
    const std::string lock = fmt::format("/tmp/ddprun-port-{}.lock", wanted);
    int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    const bool locked = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    std::string why = locked ? io::bindError(wanted) : "another ddprun run holds it";
    if (!why.empty()) {
      if (fd >= 0) ::close(fd);
      throw ddp::ConfigError(fmt::format("--master-port {} is not free on this host ({}): choose another port, or leave "
                                         "--master-port out and ddprun picks a free one",
                                         wanted, why));
    }
    fd_ = fd;
    port_ = wanted;
  }
  PortReservation() {
    for (int attempt = 0; attempt < 64; ++attempt) {
      int port = 0;
      int probe = io::listenTcp("0.0.0.0", port);
      ::close(probe);
      const std::string lock = fmt::format("/tmp/ddprun-port-{}.lock", port);
      int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        fd_ = fd;
        port_ = port;
        return;
      }
      if (fd >= 0) ::close(fd);
    }
    throw ddp::Error("no free port for MASTER_PORT after 64 tries");
  }
  ~PortReservation() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1, port_ = 0;
};

void checkResolvable(const LaunchPlan& plan, const std::string& localHost, const std::string& source) {
  for (const auto& h : plan.hosts) {
    if (h.host == "localhost" || h.host == localHost) continue;
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(h.host.c_str(), nullptr, &hints, &res);
    if (rc != 0) throw ddp::ConfigError(fmt::format("host '{}' (from {}): cannot be resolved: {}", h.host, source, ::gai_strerror(rc)));
    ::freeaddrinfo(res);
  }
}

// The run directory: made here (parents too); a default name taken by another run in the same
// second gets a suffix; an explicit one that already holds a run is refused.
std::string makeRunDirectory(const std::string& dir, bool explicitDir, bool profile) {
  std::string chosen = dir;
  if (explicitDir) {
    if (fs::exists(fs::path(dir) / "run.json"))
      throw ddp::ConfigError(fmt::format("run directory {} already holds a run (run.json): choose another --run-dir", dir));
    io::makeDirectories(dir, "run directory");
  } else {
    io::makeDirectories(fs::path(dir).parent_path().string(), "run directory");
    for (int n = 1;; ++n) {
      chosen = n == 1 ? dir : fmt::format("{}-{}", dir, n);
      if (::mkdir(chosen.c_str(), 0755) == 0) break;
      if (errno != EEXIST || n > 1000)
        throw ddp::ConfigError(fmt::format("run directory {}: cannot create: {}", chosen, std::strerror(errno)));
    }
  }
  for (const char* sub : {"ranks", "timings"}) io::makeDirectories(chosen + "/" + sub, "run directory");
  if (profile) io::makeDirectories(chosen + "/nccl", "run directory");
  return chosen;
}

// Moves an attempt's ranks/, timings/ and nccl/ to <run>/attempts/K/ and makes them anew for
// the next attempt; returns the directory, relative to the run directory.
std::string keepAttempt(const std::string& runDir, int attempt, bool profile) {
  const std::string rel = fmt::format("attempts/{}", attempt);
  const fs::path dest = fs::path(runDir) / rel;
  io::makeDirectories(dest.string(), "run directory");
  for (const char* sub : {"ranks", "timings", "nccl"}) {
    std::error_code ec;
    if (fs::exists(fs::path(runDir) / sub, ec)) fs::rename(fs::path(runDir) / sub, dest / sub, ec);
    if (ec) throw ddp::Error(fmt::format("keeping attempt {}: moving {}/{}: {}", attempt, runDir, sub, ec.message()));
  }
  for (const char* sub : {"ranks", "timings"}) io::makeDirectories(runDir + "/" + sub, "run directory");
  if (profile) io::makeDirectories(runDir + "/nccl", "run directory");
  return rel;
}

int launch(const std::vector<std::string>& rawArgs, const std::vector<std::string>& fullArgv) {
  CLI::App app{"ddprun: start PROGRAM on N ranks through mpirun (one per slot, GPU or CPU), with a rank\n"
               "environment torchrun-style programs understand, per-rank logs, a failure report that names\n"
               "the rank that failed first, and with --profile the profiler's report at the end.\n"
               "Examples:\n"
               "  ddprun -np 4 train --model resnet18 --steps 100\n"
               "  ddprun --profile -H node1:8,node2:8 ./train\n"
               "  ddprun -np 2 /usr/bin/python3 ddp_script.py      (init_process_group(init_method=\"env://\"))\n"
               "  ddprun doctor                                    (what this machine can run)",
               "ddprun"};
  app.prefix_command();
  LaunchOptions o;
  JobSettings settings;
  int np = 0;
  bool dryRun = false, noGpuBinding = false, showVersion = false;
  int grace = 5;
  double startTimeout = 120;
  std::string logLevel = "info";
  app.add_option("-n,--np", np, "Ranks to start (default: every slot). Example: -np 8")->check(CLI::Range(-1000000, 1000000));
  app.add_option("-H,--host", o.hostList, "Hosts and slots. Example: -H node1:8,node2:8");
  app.add_option("--hostfile", o.hostfile, "Open MPI / DeepSpeed hostfile, lines 'host slots=N'. Example: --hostfile hosts.txt");
  app.add_option("--nproc-per-node", o.nprocPerNode, "Slots on every host (torchrun's meaning). Example: --nproc-per-node 8");
  app.add_option("--run-dir", o.runDir, "Run directory (default ./ddprun-runs/<timestamp>-<program>). Example: --run-dir runs/a");
  app.add_flag("--profile", o.profile, "Capture NCCL logs (NCCL_DEBUG=INFO into <run>/nccl) and print the profiler's report at the end");
  app.add_option("--nccl-debug", o.ncclDebug, "NCCL_DEBUG for every rank. Example: --nccl-debug WARN");
  app.add_option("--nccl-subsys", o.ncclSubsys, "NCCL_DEBUG_SUBSYS for every rank. Example: --nccl-subsys INIT,NET");
  app.add_option("-x", o.exports, "Export a variable to every rank, VAR (its value here) or VAR=VALUE; repeatable. Example: -x OMP_NUM_THREADS=4")->allow_extra_args(false)->take_all();
  app.add_option("--mpi-args", o.mpiArgs, "Extra mpirun arguments, split like a shell. Example: --mpi-args \"--mca btl self,tcp\"");
  app.add_flag("--oversubscribe", o.oversubscribe, "Allow more ranks than slots on the hosts given");
  app.add_option("--output", o.output, "Rank output on the console: tag ([host:rank] per line), rank:N (one rank) or quiet. Example: --output rank:0");
  app.add_option("--grace", grace, "Seconds between SIGTERM and SIGKILL when ranks are stopped. Example: --grace 10")->check(CLI::Range(0, 3600));
  app.add_flag("--no-gpu-binding", noGpuBinding, "Do not set CUDA_VISIBLE_DEVICES by local rank");
  app.add_option("--start-timeout", startTimeout, "Seconds for every rank to start. Example: --start-timeout 300")->check(CLI::Range(1.0, 86400.0));
  app.add_option("--timeout", settings.timeoutSeconds, "Hang watchdog: when no rank completes a step for S seconds (from the "
                 "step timers' timings files), report the stalled ranks with their stacks, stop the job and exit 124; "
                 "programs without step timings are judged by wall time. Example: --timeout 300")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option("--max-restarts", settings.maxRestarts, "After a failure, run the whole job again up to N times (fresh MASTER_PORT, "
                 "DDPRUN_ATTEMPT=1, 2...; earlier attempts' logs kept in <run>/attempts/K). Example: --max-restarts 2")
      ->check(CLI::Range(0, 1000));
  int masterPortWanted = 0;
  app.add_option("--master-port", masterPortWanted, "MASTER_PORT for rank 0's rendezvous (default: a free port, a new one per "
                 "attempt). Example: --master-port 29500")->check(CLI::Range(1, 65535));
  std::string instance;
  app.add_option("--instance", instance, "The instance type the job runs on, recorded in run.json for ddprof compare. "
                 "Example: --instance ecs.gn7i-c16g1.16xlarge");
  app.add_flag("--dry-run", dryRun, "Print the mpirun command and the rank environment, shell-quoted, and exit");
  app.add_option("--log-level", logLevel, "ddprun's own messages: error, warn, info or debug. Example: --log-level debug");
  app.add_flag("--version", showVersion, "Print the version and exit");
  auto args = normalise(rawArgs);
  try {
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ddprun: " << e.what() << " (see ddprun --help)\n";
    return 2;
  }
  if (showVersion) {
    std::cout << "ddprun " << DDP_VERSION << "\n";
    return 0;
  }
  o.program = app.remaining();
  if (!o.program.empty() && o.program.front() == "--") o.program.erase(o.program.begin());
  if (app.count("--np")) o.np = np;
  o.graceSeconds = grace;
  o.gpuBinding = !noGpuBinding;
  settings.verbosity = parseVerbosity(logLevel);
  settings.graceSeconds = grace;
  settings.startTimeoutSeconds = startTimeout;
  settings.profile = o.profile;
  if (!instance.empty()) settings.instance = ddp::profiler::toJson(ddp::profiler::decodeInstance(instance));

  settings.command = fullArgv;

  PlanContext ctx;
  ctx.environment = ddp::Environment::fromProcess();
  ctx.root = ::geteuid() == 0;
  ctx.localSlots = usableCores();
  ctx.localHost = io::hostname();
  ctx.cwd = fs::current_path().string();
  ctx.timestamp = timestamp();
  if (o.program.empty()) throw ddp::ConfigError("no program to run (ddprun [options] [--] PROGRAM [ARGS...]; see --help)");
  {
    std::string resolved = resolveExecutable(o.program.front(), ctx.environment);
    o.program.front() = fs::absolute(resolved).lexically_normal().string();
  }
  try {
    ctx.mpirun = resolveExecutable("mpirun", ctx.environment);
  } catch (const ddp::ConfigError&) {
    throw ddp::ConfigError("mpirun not found on PATH: install Open MPI (apt-get install openmpi-bin)");
  }
  settings.mpirun = ctx.mpirun;
  ctx.worker = fs::read_symlink("/proc/self/exe").string();
  if (!o.hostfile.empty()) {
    std::ifstream in(o.hostfile);
    if (!in) throw ddp::ConfigError(fmt::format("hostfile {}: cannot read: {}", o.hostfile, std::strerror(errno)));
    ctx.hostfileText.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  auto masterPort = masterPortWanted > 0 ? PortReservation(masterPortWanted) : PortReservation();
  ctx.masterPort = masterPort.port();
  auto plan = makeLaunchPlan(o, ctx);
  checkResolvable(plan, ctx.localHost, !o.hostList.empty() ? "-H" : !o.hostfile.empty() ? o.hostfile : "the Slurm allocation");
  if (dryRun) {
    std::cout << renderPlan(plan)
              << "# when it runs the job, ddprun also sets DDPRUN_CONTROL and DDPRUN_CONTROL_TOKEN (its control\n"
                 "# connection: node ranks, exit records, teardown); without them, as printed, each worker runs\n"
                 "# on its own and exits with its program's status\n";
    return 0;
  }
  for (const auto& w : plan.warnings) std::cerr << "ddprun: warning: " << w << "\n";

  const bool local = plan.masterAddr == "127.0.0.1";
  o.runDir = makeRunDirectory(plan.runDir, !o.runDir.empty(), o.profile);
  for (int attempt = 0;; ++attempt) {
    std::optional<PortReservation> freshPort;  // every attempt gets its own MASTER_PORT
    if (attempt > 0 && masterPortWanted == 0) ctx.masterPort = freshPort.emplace().port();
    ctx.attempt = attempt;
    int controlFd = io::listenTcp(local ? "127.0.0.1" : "0.0.0.0", ctx.controlPort);
    ctx.controlToken = io::randomHex(16);
    plan = makeLaunchPlan(o, ctx);
    if (attempt == 0 && settings.verbosity >= Verbosity::kInfo)
      std::cerr << fmt::format("ddprun: {} ranks of {} on {}; run directory {}\n", plan.np,
                               fs::path(o.program.front()).filename().string(), plan.hosts.size() == 1 ? plan.hosts[0].host
                               : fmt::format("{} hosts", plan.hosts.size()), plan.runDir);
    settings.attempt = attempt;
    const auto outcome = runJob(plan, controlFd, settings);
    ::close(controlFd);
    if (outcome.exitCode == 0 || outcome.interrupted || attempt >= settings.maxRestarts) return outcome.exitCode;
    const std::string kept = keepAttempt(plan.runDir, attempt, o.profile);
    settings.earlierAttempts.push_back({{"attempt", attempt}, {"exit_code", outcome.exitCode}, {"reason", outcome.summary}, {"files", kept}});
    std::cerr << fmt::format("ddprun: attempt {} of {} failed ({}); its logs are in {}; restarting the job (--max-restarts {})\n",
                             attempt + 1, settings.maxRestarts + 1, outcome.summary, kept, settings.maxRestarts);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (!args.empty() && args[0] == "--worker") {
      args.erase(args.begin());
      if (!args.empty() && args[0] == "--") args.erase(args.begin());
      return runWorker(args);
    }
    if (!args.empty() && args[0] == "doctor") return runDoctor({args.begin() + 1, args.end()});
    return launch(args, std::vector<std::string>(argv, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "ddprun: " << e.what() << "\n";
    return ddp::exitCodeFor(e);
  }
}
