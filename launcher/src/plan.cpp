#include "ddp/launcher/plan.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/log.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/launcher/rank.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace ddp::launcher {
namespace {

constexpr const char* kDefaultProfileSubsys = "INIT,ENV,NET,GRAPH,COLL";

std::string basename(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string hostsArgument(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const auto& h : hosts) out += fmt::format("{}{}:{}", out.empty() ? "" : ",", h.host, h.slots);
  return out;
}

bool isLocalName(const std::string& host, const std::string& localHost) {
  return host == "localhost" || host == "127.0.0.1" || host == localHost;
}

}  // namespace

std::vector<std::string> splitShellWords(const std::string& text, const std::string& what) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size())
        word += text[++i];
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      inWord = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      inWord = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (inWord) words.push_back(word);
      word.clear();
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote)
    throw ConfigError(fmt::format("{} '{}': unbalanced {} quote", what, text, quote == '"' ? "double" : "single"));
  if (inWord) words.push_back(word);
  return words;
}

std::string shellQuote(const std::string& word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word)
    safe = safe && (std::isalnum(static_cast<unsigned char>(c)) ||
                    std::string_view("@%+=:,./-_").find(c) != std::string_view::npos);
  if (safe) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

void checkOptions(const LaunchOptions& o) {
  if (o.program.empty() || o.program.front().empty())
    throw ConfigError("no program to run (ddprun [options] [--] PROGRAM [ARGS...])");
  if (o.np && *o.np < 1) throw ConfigError(fmt::format("-np {}: at least one rank is needed", *o.np));
  if (o.nprocPerNode < 0) throw ConfigError(fmt::format("--nproc-per-node {}: must be at least 1", o.nprocPerNode));
  if (!o.hostList.empty() && !o.hostfile.empty()) throw ConfigError("give -H or --hostfile, not both");
  if (!(o.graceSeconds >= 0 && o.graceSeconds <= 3600))
    throw ConfigError(fmt::format("--grace {}: must be 0 to 3600 seconds", o.graceSeconds));
  parseOutputMode(o.output, "--output");
  log::parseLevel(o.logLevel, "--log-level");
  if (o.sampleMs != 0 && (o.sampleMs < 50 || o.sampleMs > 60000))
    throw ConfigError(fmt::format("--sample-ms {}: 0 (no sampling) or 50 to 60000 milliseconds", o.sampleMs));
  if (o.launcher != "mpirun" && o.launcher != "srun")
    throw ConfigError(fmt::format("--launcher {}: mpirun or srun", o.launcher));
  if (o.launcher == "srun" && (!o.hostList.empty() || !o.hostfile.empty()))
    throw ConfigError(
        fmt::format("--launcher srun places the ranks on the Slurm allocation's nodes: drop {}, or use "
                    "--launcher mpirun",
                    !o.hostList.empty() ? "-H" : "--hostfile"));
}

// Hosts and slots (-H, else --hostfile, else the Slurm allocation, else this host) and the ranks
// on them; true when ranks must share slots (--oversubscribe, or too many ranks for this host).
bool placeRanks(const LaunchOptions& o, const PlanContext& ctx, LaunchPlan& plan) {
  if (!o.hostList.empty()) {
    plan.hosts = parseHostList(o.hostList);
  } else if (!o.hostfile.empty()) {
    plan.hosts = parseHostfile(ctx.hostfileText, o.hostfile);
    if (plan.hosts.empty()) throw ConfigError(fmt::format("hostfile {} names no host", o.hostfile));
  } else if (auto slurm = slurmAllocation(ctx.environment)) {
    plan.hosts = *slurm;
  } else if (o.launcher == "srun") {
    throw ConfigError(fmt::format(
        "--launcher srun starts the ranks in a Slurm allocation, and there is none here ({} is {}): run "
        "it under salloc or sbatch, e.g. salloc -N2 -n4 ddprun --launcher srun PROGRAM",
        ddp::env::kSlurmJobId, ctx.environment.has(ddp::env::kSlurmJobId) ? "set but no node list" : "not set"));
  } else {
    plan.hosts = {{ctx.localHost, std::max(1, ctx.localSlots)}};
    plan.localOnly = true;
  }
  plan.hosts.erase(std::remove_if(plan.hosts.begin(), plan.hosts.end(),
                                  [&](const HostSlots& h) {
                                    return std::count(o.excludedHosts.begin(), o.excludedHosts.end(), h.host) > 0;
                                  }),
                   plan.hosts.end());
  if (plan.hosts.empty()) throw ConfigError("every host was lost");
  if (o.nprocPerNode > 0)
    for (auto& h : plan.hosts) h.slots = o.nprocPerNode;
  const int slots = totalSlots(plan.hosts);
  plan.np = o.np.value_or(slots);
  if (plan.np <= slots || o.oversubscribe) return o.oversubscribe;
  if (!plan.localOnly)
    throw ConfigError(
        fmt::format("-np {} but the hosts have {} slots ({}): add hosts or slots, or pass --oversubscribe", plan.np,
                    slots, hostsArgument(plan.hosts)));
  plan.warnings.push_back(
      fmt::format("-np {} is more than the {} cores of this host: ranks share cores "
                  "(--oversubscribe), so each runs slower",
                  plan.np, slots));
  return true;
}

// NCCL's debug capture: --profile writes it into the run directory; --nccl-debug/--nccl-subsys
// set it as asked (a subsystem list the user set in the environment is kept).
void ncclCapture(const LaunchOptions& o, const PlanContext& ctx, const LaunchPlan& plan,
                 std::map<std::string, std::string>& env) {
  const std::string ncclDebug(ddp::env::kNcclDebug), ncclSubsys(ddp::env::kNcclDebugSubsys);
  const bool userSubsys = !o.ncclSubsys.empty() || ctx.environment.has(ncclSubsys);
  if (o.profile) {
    env[ncclDebug] = o.ncclDebug.empty() ? "INFO" : o.ncclDebug;
    if (!userSubsys) env[ncclSubsys] = kDefaultProfileSubsys;
    env[std::string(ddp::env::kNcclDebugFile)] = RunLayout(plan.runDir).ncclDebugFile();
    if (o.sampleMs > 0) env[std::string(ddp::env::kSampleMs)] = std::to_string(o.sampleMs);
  } else if (!o.ncclDebug.empty()) {
    env[ncclDebug] = o.ncclDebug;
  }
  if (!o.ncclSubsys.empty()) env[ncclSubsys] = o.ncclSubsys;
}

// torchrun's contract beyond the rank variables (docs/world.md): the run id, the restart count and
// budget, the role, no agent store, NCCL's asynchronous error handling; a value the user set here
// is inherited instead.
void torchrunContract(const LaunchOptions& o, const PlanContext& ctx, const LaunchPlan& plan,
                      std::map<std::string, std::string>& env) {
  auto unlessSet = [&](std::string_view name, std::string value) {
    if (!ctx.environment.has(name)) env[std::string(name)] = std::move(value);
  };
  unlessSet(ddp::env::kTorchelasticRunId, basename(plan.runDir));
  env[std::string(ddp::env::kTorchelasticRestartCount)] = std::to_string(ctx.attempt);
  env[std::string(ddp::env::kTorchelasticMaxRestarts)] = std::to_string(o.maxRestarts);
  unlessSet(ddp::env::kTorchelasticUseAgentStore, "False");
  unlessSet(ddp::env::kRoleName, "default");
  unlessSet(ddp::env::kTorchNcclAsyncErrorHandling, "1");
}

bool exported(const LaunchOptions& o, std::string_view name) {
  return std::any_of(o.exports.begin(), o.exports.end(),
                     [&](const std::string& spec) { return spec.compare(0, spec.find('='), name) == 0; });
}

// Python and OpenMP in the ranks: output unbuffered (as torchrun's `python -u`), ddprun's Python
// package first on the path (the automatic instrumentation under --profile, `import ddprun`
// always), and OpenMP threads sized by each worker to its host (DDPRUN_OMP_THREADS=auto) — each
// only when the user has not set it.
void pythonAndThreads(const LaunchOptions& o, const PlanContext& ctx, LaunchPlan& plan,
                      std::map<std::string, std::string>& env) {
  using namespace ddp::env;
  if (!ctx.environment.has(kPythonUnbuffered) && !exported(o, kPythonUnbuffered))
    env[std::string(kPythonUnbuffered)] = "1";
  if (!ctx.pythonDir.empty() && !exported(o, kPythonPath)) {
    std::string path = ctx.pythonDir + "/boot:" + ctx.pythonDir;
    if (auto user = ctx.environment.get(kPythonPath); user && !user->empty()) path += ":" + *user;
    env[std::string(kPythonPath)] = path;
  }
  if (o.profile && o.instrument && !ctx.pythonDir.empty()) env[std::string(kInstrument)] = "1";
  if (!ctx.environment.has(kOmpNumThreads) && !exported(o, kOmpNumThreads)) {
    env[std::string(kOmpDefault)] = "auto";
    const int here = plan.localOnly ? plan.np : std::max(1, plan.hosts.front().slots);
    plan.notes.push_back(fmt::format(
        "OMP_NUM_THREADS is not set: each rank gets its host's cores divided by its ranks there ({} on this host: "
        "{} cores, {} ranks); set OMP_NUM_THREADS (or -x OMP_NUM_THREADS=N) to choose",
        std::max(1, ctx.localSlots / std::max(1, here)), ctx.localSlots, here));
  }
}

// glibc's malloc returns each large block to the kernel when it is freed (mmap/munmap above a
// threshold that moves with what was freed, and the heap's top trimmed back): a training loop
// that allocates and frees the same tensors every step then takes fresh page faults every step,
// and one rank's allocation history can make it fault more than the others'. Unless the user
// chose (either variable, or GLIBC_TUNABLES), ranks keep freed blocks under 32 MiB in the heap
// and its top up to 256 MiB: a process's peak memory stays what it was, reached once.
void mallocReuse(const LaunchOptions& o, const PlanContext& ctx, std::map<std::string, std::string>& env) {
  using namespace ddp::env;
  for (auto name : {kMallocMmapThreshold, kMallocTrimThreshold, kGlibcTunables})
    if (ctx.environment.has(name) || exported(o, name)) return;
  env[std::string(kMallocMmapThreshold)] = "33554432";
  env[std::string(kMallocTrimThreshold)] = "268435456";
}

// -x VAR[=VALUE]: VAR alone takes its value here.
void userExports(const LaunchOptions& o, const PlanContext& ctx, std::map<std::string, std::string>& env) {
  for (const auto& spec : o.exports) {
    auto eq = spec.find('=');
    std::string name = spec.substr(0, eq);
    bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!valid) throw ConfigError(fmt::format("-x '{}': '{}' is not a variable name", spec, name));
    if (eq != std::string::npos) {
      env[name] = spec.substr(eq + 1);
    } else if (auto value = ctx.environment.get(name)) {
      env[name] = *value;
    } else {
      throw ConfigError(fmt::format("-x {}: {} is not set in this environment (use -x {}=VALUE)", name, name, name));
    }
  }
}

// What every rank gets (-x): the rendezvous, the run directory and attempt, the worker's settings.
std::map<std::string, std::string> rankExports(const LaunchOptions& o, const PlanContext& ctx, LaunchPlan& plan,
                                               bool allHere) {
  std::map<std::string, std::string> env;
  env[std::string(ddp::env::kMasterAddr)] = plan.masterAddr;
  env[std::string(ddp::env::kMasterPort)] = std::to_string(plan.masterPort);
  env[std::string(ddp::env::kRunDir)] = plan.runDir;
  env[std::string(ddp::env::kAttempt)] = std::to_string(ctx.attempt);
  env[std::string(ddp::env::kOutput)] = o.output;
  env[std::string(ddp::env::kGraceSeconds)] = fmt::format("{}", static_cast<int>(o.graceSeconds + 0.5));
  env[std::string(ddp::env::kGpuBinding)] = o.gpuBinding ? "local-rank" : "none";
  env[std::string(ddp::env::kLogLevel)] = o.logLevel;
  if (ctx.controlPort > 0) {
    env[std::string(ddp::env::kControl)] = fmt::format("{}:{}", allHere ? "127.0.0.1" : ctx.localHost, ctx.controlPort);
    env[std::string(ddp::env::kControlToken)] = ctx.controlToken;
  }
  ncclCapture(o, ctx, plan, env);
  torchrunContract(o, ctx, plan, env);
  pythonAndThreads(o, ctx, plan, env);
  mallocReuse(o, ctx, env);
  userExports(o, ctx, env);
  return env;
}

std::vector<std::string> mpirunArgv(const LaunchOptions& o, const PlanContext& ctx, const LaunchPlan& plan,
                                    bool oversubscribe) {
  std::vector<std::string> a = {ctx.mpirun, "-np", std::to_string(plan.np), "--host", hostsArgument(plan.hosts)};
  if (oversubscribe) a.push_back("--oversubscribe");
  // Open MPI binds each rank to one core by default, which starves a rank's data-loader and
  // intra-op threads; ranks are left to the scheduler (or to the user's --mpi-args).
  a.insert(a.end(), {"--bind-to", "none"});
  for (const auto& [name, value] : plan.rankEnv) a.insert(a.end(), {"-x", name});
  a.insert(a.end(), plan.mpiArgs.begin(), plan.mpiArgs.end());
  a.insert(a.end(), ctx.worker.begin(), ctx.worker.end());
  a.push_back("--");
  a.insert(a.end(), o.program.begin(), o.program.end());
  return a;
}

// Inside a Slurm allocation, srun starts the workers as one job step: Slurm's PMIx for MPI_Init
// (Debian's Open MPI has no other Slurm PMI), no CPU binding (as mpirun's --bind-to none), and
// the rank environment inherited from srun's own (--export=ALL). ddprun stops the ranks itself,
// so srun is not told to kill the step on a bad exit.
std::vector<std::string> srunArgv(const LaunchOptions& o, const PlanContext& ctx, const LaunchPlan& plan,
                                  bool oversubscribe) {
  std::vector<std::string> a = {ctx.srun,          "--mpi=pmix",           "--ntasks=" + std::to_string(plan.np),
                                "--cpu-bind=none", "--kill-on-bad-exit=0", "--export=ALL"};
  if (oversubscribe) a.push_back("--overcommit");
  if (!o.excludedHosts.empty()) {  // a host lost: the allocation's other nodes only, sharing the CPUs that
    // the lost node's step still holds in slurmctld's view (it never completes there)
    std::string excluded;
    for (const auto& h : o.excludedHosts) excluded += (excluded.empty() ? "" : ",") + h;
    a.insert(a.end(), {"--exclude=" + excluded, "--nodes=" + std::to_string(plan.hosts.size()), "--overlap"});
  }
  a.insert(a.end(), plan.mpiArgs.begin(), plan.mpiArgs.end());
  a.insert(a.end(), ctx.worker.begin(), ctx.worker.end());
  a.push_back("--");
  a.insert(a.end(), o.program.begin(), o.program.end());
  return a;
}

}  // namespace

LaunchPlan makeLaunchPlan(const LaunchOptions& o, const PlanContext& ctx) {
  checkOptions(o);
  LaunchPlan plan;
  const bool oversubscribe = placeRanks(o, ctx, plan);
  plan.runDir =
      !o.runDir.empty() ? o.runDir : fmt::format("ddprun-runs/{}-{}", ctx.timestamp, basename(o.program.front()));
  if (plan.runDir.front() != '/') plan.runDir = (ctx.cwd == "/" ? "" : ctx.cwd) + "/" + plan.runDir;
  const auto& first = plan.hosts.front().host;
  const bool allHere = plan.localOnly || (plan.hosts.size() == 1 && isLocalName(first, ctx.localHost));
  plan.masterAddr = allHere ? "127.0.0.1" : first;
  plan.masterPort = ctx.masterPort;
  plan.rankEnv = rankExports(o, ctx, plan, allHere);
  // A rank whose program called MPI_Init and then died is ddprun's to report and tear down: without
  // this, mpirun aborts the job itself ("exiting improperly"), racing the orderly teardown.
  plan.mpirunEnv[std::string(ddp::env::kOmpiAllowExitWithoutSync)] = "1";
  // mpirun's daemons notice a dead link to mpirun in 16-26 s instead of Open MPI's 8 minutes (TCP
  // keepalive on their lifeline), so none is left on a host cut off: ddprun has named the host
  // by then (control::kLinkSilence) and its workers have stopped their programs.
  for (const auto& [name, value] : {std::pair<const char*, const char*>{"OMPI_MCA_oob_tcp_keepalive_time", "10"},
                                    {"OMPI_MCA_oob_tcp_keepalive_intvl", "4"},
                                    {"OMPI_MCA_oob_tcp_keepalive_probes", "4"}})
    if (!ctx.environment.has(name)) plan.mpirunEnv[name] = value;
  // hwloc's plugins for OpenGL displays (it tries X servers :0 to :9, twice), OpenCL devices and
  // libxml2 add no object Open MPI uses (its built-in XML reader and writer stand in for libxml2):
  // without them mpirun starts faster (docs/benchmarks.md, "Launch overhead"). PCI stays.
  if (!ctx.environment.has("HWLOC_PLUGINS_BLACKLIST"))
    plan.mpirunEnv["HWLOC_PLUGINS_BLACKLIST"] = "hwloc_gl,hwloc_opencl,hwloc_xml_libxml";
  // Likewise for the srun that mpirun starts its daemons with inside an allocation, after a host loss.
  if (!o.excludedHosts.empty() && ctx.environment.has(ddp::env::kSlurmJobId) &&
      !ctx.environment.has("OMPI_MCA_plm_slurm_args"))
    plan.mpirunEnv["OMPI_MCA_plm_slurm_args"] = "--overlap";
  if (ctx.root) {
    plan.mpirunEnv[std::string(ddp::env::kOmpiAllowRoot)] = "1";
    plan.mpirunEnv[std::string(ddp::env::kOmpiAllowRootConfirm)] = "1";
  }
  plan.program = o.program;
  plan.launcher = o.launcher;
  plan.mpiArgs = splitShellWords(o.mpiArgs, "--mpi-args");
  plan.argv = o.launcher == "srun" ? srunArgv(o, ctx, plan, oversubscribe) : mpirunArgv(o, ctx, plan, oversubscribe);
  return plan;
}

std::vector<std::pair<std::string, std::vector<int>>> ranksByHost(const LaunchPlan& plan) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  int rank = 0;
  for (const auto& h : plan.hosts) {
    out.push_back({h.host, {}});
    for (int s = 0; s < h.slots && rank < plan.np; ++s) out.back().second.push_back(rank++);
  }
  return out;
}

std::string renderPlan(const LaunchPlan& plan) {
  std::string out;
  for (const auto& w : plan.warnings) out += "# warning: " + w + "\n";
  out += fmt::format("# {} ranks on {}; run directory {}\n", plan.np, hostsArgument(plan.hosts), plan.runDir);
  std::string line;
  for (const auto& [name, value] : plan.mpirunEnv) line += name + "=" + shellQuote(value) + " ";
  for (const auto& [name, value] : plan.rankEnv) line += name + "=" + shellQuote(value) + " ";
  for (size_t i = 0; i < plan.argv.size(); ++i) line += (i ? " " : "") + shellQuote(plan.argv[i]);
  return out + line + "\n";
}

}  // namespace ddp::launcher
