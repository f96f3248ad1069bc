#pragma once
// The launch plan: everything `ddprun` will start, computed without side effects from the
// options and a context the caller gathered (docs/launcher.md). Unit-tested without spawning.

#include "ddp/common/environment.hpp"
#include "ddp/launcher/hosts.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

struct LaunchOptions {
  std::optional<int> np;                   // -np; default: every slot
  std::string hostList;                    // -H a:8,b:8
  std::string hostfile;                    // --hostfile (its text comes in the context)
  int nprocPerNode = 0;                    // --nproc-per-node: slots per host, torchrun-style
  std::string runDir;                      // --run-dir; default ddprun-runs/<timestamp>-<program>
  bool profile = false;                    // --profile: NCCL debug capture into the run directory
  int sampleMs = 500;                      // --sample-ms: utilisation samples of a profiled run (0: none)
  bool instrument = true;                  // with --profile, time Python ranks' steps (--no-instrument)
  int maxRestarts = 0;                     // --max-restarts, for TORCHELASTIC_MAX_RESTARTS
  std::string ncclDebug;                   // --nccl-debug LEVEL
  std::string ncclSubsys;                  // --nccl-subsys LIST
  std::vector<std::string> exports;        // -x VAR[=VALUE]
  std::string mpiArgs;                     // --mpi-args "...", split like a shell would (quotes)
  std::string launcher = "mpirun";         // --launcher mpirun | srun (inside a Slurm allocation)
  bool oversubscribe = false;              // --oversubscribe
  std::string output = "tag";              // --output tag | rank:N | quiet
  double graceSeconds = 5;                 // --grace: SIGTERM to SIGKILL when stopping ranks
  bool gpuBinding = true;                  // CUDA_VISIBLE_DEVICES by local rank (--no-gpu-binding)
  std::string logLevel = "info";           // --log-level, for the workers' messages too
  std::vector<std::string> program;        // PROGRAM ARGS...
  std::vector<std::string> excludedHosts;  // lost in an earlier attempt (--min-np): left out of the hosts
};

// What the plan needs from the world, gathered by the caller.
struct PlanContext {
  Environment environment;
  bool root = false;
  int localSlots = 1;  // cores of this host
  std::string localHost = "localhost";
  std::string cwd = "/";
  std::string timestamp;  // for the default run directory, e.g. 20261129-224501
  int masterPort = 0;     // a free port chosen for the run
  std::string mpirun = "mpirun";
  std::string srun = "srun";
  std::vector<std::string> worker = {"ddprun", "worker"};  // what each rank runs, before "-- PROGRAM"
  std::string hostfileText;                                // contents of options.hostfile
  int controlPort = 0;                                     // ddprun's control listener; 0: none (--dry-run)
  int attempt = 0;                                         // DDPRUN_ATTEMPT: 0, then 1, 2... under --max-restarts
  std::string controlToken;                                // what workers prove themselves with
  std::string pythonDir;  // ddprun's Python package (python/: boot/sitecustomize.py, ddprun/); "" when absent
};

struct LaunchPlan {
  int np = 0;
  std::string launcher = "mpirun";  // what argv starts: mpirun, or srun inside a Slurm allocation
  std::vector<HostSlots> hosts;
  bool localOnly = false;  // no host was given: everything runs here
  std::string runDir;      // absolute
  std::string masterAddr;
  int masterPort = 0;
  std::map<std::string, std::string> rankEnv;    // set for mpirun and exported (-x) to every rank
  std::map<std::string, std::string> mpirunEnv;  // for mpirun itself (allow-run-as-root)
  std::vector<std::string> program;              // PROGRAM ARGS...
  std::vector<std::string> mpiArgs;              // --mpi-args, as words
  std::vector<std::string> argv;                 // mpirun (or srun) ... WORKER -- PROGRAM ARGS
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // what ddprun chose for the user, said once (info)
};

// Throws ConfigError (exit 2) for anything the user got wrong: -np below 1, more ranks than
// slots on given hosts without --oversubscribe, a bad host list or hostfile line, -x of an
// unset variable, an unbalanced quote in --mpi-args, no program.
LaunchPlan makeLaunchPlan(const LaunchOptions& options, const PlanContext& context);

// Where each rank is to run: the hosts' slots filled in order, as mpirun (--map-by slot, its
// default) and srun (block distribution, its default) place them. Hosts in the plan's order.
std::vector<std::pair<std::string, std::vector<int>>> ranksByHost(const LaunchPlan& plan);

// POSIX shell quoting: safe words stay bare, anything else goes in single quotes.
std::string shellQuote(const std::string& word);
// The plan as commands a user could paste: environment assignments, then the argv.
std::string renderPlan(const LaunchPlan& plan);
// Splits like a shell: whitespace separates, '...' and "..." group, backslash escapes.
std::vector<std::string> splitShellWords(const std::string& text, const std::string& what);

}  // namespace ddp::launcher
