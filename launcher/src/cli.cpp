#include "ddp/launcher/cli.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/log.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/config.hpp"
#include "ddp/launcher/worker.hpp"
#include "io.hpp"
#include "probe.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>

namespace ddp::launcher {
namespace {

constexpr const char* kDescription =
    "ddprun: start PROGRAM on N ranks through mpirun (one per slot, GPU or CPU), with a rank\n"
    "environment torchrun-style programs understand, per-rank logs, a failure report that names\n"
    "the rank that failed first, and with --profile the profiler's report at the end.\n"
    "Examples:\n"
    "  ddprun -np 4 train --model resnet18 --steps 100\n"
    "  ddprun --profile -H node1:8,node2:8 ./train\n"
    "  ddprun -np 2 /usr/bin/python3 ddp_script.py      (init_process_group(init_method=\"env://\"))\n"
    "  ddprun doctor                                    (what this machine can run)";

// Everything the command line fills in.
struct Parsed {
  LaunchRequest launch;
  DoctorOptions doctor;
  int np = 0, grace = 5;
  bool noGpuBinding = false, version = false;
  std::string logLevel = "info";
};

void addLaunchOptions(CLI::App& app, Parsed& p) {
  auto& o = p.launch.options;
  auto& s = p.launch.settings;
  app.add_option("-n,--np", p.np, "Ranks to start (default: every slot). Example: -np 8")
      ->check(CLI::Range(-1000000, 1000000));
  app.add_option("-H,--host", o.hostList, "Hosts and slots. Example: -H node1:8,node2:8");
  app.add_option("--hostfile", o.hostfile,
                 "Open MPI / DeepSpeed hostfile, lines 'host slots=N'. Example: --hostfile hosts.txt");
  app.add_option("--nproc-per-node", o.nprocPerNode,
                 "Slots on every host (torchrun's meaning). Example: --nproc-per-node 8");
  app.add_option("--run-dir", o.runDir,
                 "Run directory (default ./ddprun-runs/<timestamp>-<program>). Example: --run-dir runs/a");
  app.add_flag("--profile", o.profile,
               fmt::format("Capture NCCL logs (NCCL_DEBUG=INFO into <run>/{}) and print the profiler's "
                           "report at the end",
                           RunLayout::kNcclName));
  app.add_option("--sample-ms", o.sampleMs,
                 "With --profile, sample each rank's CPU, scheduling, host and GPU every MS "
                 "milliseconds into <run>/util (0: off). Example: --sample-ms 1000")
      ->capture_default_str();
  app.add_flag(
      "--no-instrument", [&o](std::int64_t) { o.instrument = false; },
      "With --profile, do not time Python ranks' training steps automatically (docs/python.md)");
  app.add_option("--nccl-debug", o.ncclDebug, "NCCL_DEBUG for every rank. Example: --nccl-debug WARN");
  app.add_option("--nccl-subsys", o.ncclSubsys, "NCCL_DEBUG_SUBSYS for every rank. Example: --nccl-subsys INIT,NET");
  app.add_option("-x", o.exports,
                 "Export a variable to every rank, VAR (its value here) or VAR=VALUE; repeatable. Example: -x "
                 "OMP_NUM_THREADS=4")
      ->allow_extra_args(false)
      ->take_all();
  app.add_option("--mpi-args", o.mpiArgs,
                 "Extra arguments for mpirun (or srun with --launcher srun), split like a shell. Example: --mpi-args "
                 "\"--mca btl self,tcp\"");
  app.add_option("--launcher", o.launcher,
                 "What starts the ranks: mpirun (default), or srun inside a Slurm allocation (salloc, sbatch). "
                 "Example: salloc -N2 -n8 ddprun --launcher srun ./train")
      ->capture_default_str();
  app.add_flag("--oversubscribe", o.oversubscribe, "Allow more ranks than slots on the hosts given");
  app.add_option(
      "--output", o.output,
      "Rank output on the console: tag ([host:rank] per line), rank:N (one rank) or quiet. Example: --output rank:0");
  app.add_option("--grace", p.grace, "Seconds between SIGTERM and SIGKILL when ranks are stopped. Example: --grace 10")
      ->check(CLI::Range(0, 3600));
  app.add_flag("--no-gpu-binding", p.noGpuBinding, "Do not set CUDA_VISIBLE_DEVICES by local rank");
  app.add_option("--start-timeout", s.startTimeoutSeconds,
                 "Seconds for every rank to start. Example: --start-timeout 300")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--timeout", s.timeoutSeconds,
                 "Hang watchdog: when no rank completes a step for S seconds (from the "
                 "step timers' timings files), report the stalled ranks with their stacks, stop the job and exit 124; "
                 "programs without step timings are judged by wall time. Example: --timeout 300")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option(
         "--max-restarts", s.maxRestarts,
         fmt::format(
             "After a failure, run the whole job again up to N times (fresh "
             "MASTER_PORT, DDPRUN_ATTEMPT=1, 2...; earlier attempts' logs kept in <run>/{}). Example: --max-restarts 2",
             fmt::format("{}/K", RunLayout::kAttemptsName)))
      ->check(CLI::Range(0, 1000));
  app.add_option("--min-np", s.minNp,
                 "With --max-restarts: after a host is lost, restart on the hosts left when they hold at least N "
                 "ranks (a smaller world, resumed from the program's checkpoint); without it a lost host ends the "
                 "job. Example: --min-np 8")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--master-port", p.launch.masterPort,
                 "MASTER_PORT for rank 0's rendezvous (default: a free port, a new one "
                 "per attempt). Example: --master-port 29500")
      ->check(CLI::Range(1, 65535));
  app.add_option("--instance", p.launch.instance,
                 "The instance type the job runs on, recorded in run.json for ddprof compare. "
                 "Example: --instance ecs.gn7e-c16g1.32xlarge");
  app.add_flag("--dry-run", p.launch.dryRun,
               "Print the mpirun command and the rank environment, shell-quoted, and exit");
  app.add_option("--log-level", p.logLevel,
                 "ddprun's own messages: error, warn, info or debug. Example: --log-level debug");
  app.add_flag("--version", p.version, "Print the version and exit");
}

CLI::App* addDoctor(CLI::App& app, DoctorOptions& d) {
  auto* doctor = app.add_subcommand("doctor",
                                    "What this machine can run, as pass / warn / fail with the fix for each.\n"
                                    "Example: ddprun doctor --json");
  doctor->prefix_command(false);  // not inherited from ddprun's: an unknown doctor option is an error
  doctor->allow_extras(false);
  doctor->add_flag("--json", d.json, "Print the checks as JSON");
  doctor->add_option("--instance", d.instance,
                     "The instance type this machine should be; its GPUs are checked against it. "
                     "Example: --instance ecs.gn7e-c16g1.32xlarge");
  doctor->add_flag(
      "--no-allreduce", [&d](int64_t) { d.allreduce = false; }, "Skip the test allreduce per backend");
  return doctor;
}

// The options before PROGRAM, checked against the table: an unknown one is an error (not a
// program name), and "-np", mpirun's spelling, becomes "--np". The program's own arguments are
// never touched: `ddprun -np 2 prog -np 3` gives prog "-np 3".
std::vector<std::string> normalise(const CLI::App& app, std::vector<std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    auto& a = args[i];
    if (a == "--" || a.empty() || a[0] != '-' || a == "-") break;
    if (a == "-np") a = "--np";
    const std::string name = a.substr(0, a.find('='));
    const CLI::Option* option = app.get_option_no_throw(name);
    if (!option && name != "-h" && name != "--help")
      throw ConfigError(
          fmt::format("unknown option '{}' (see ddprun --help; put -- before a program that starts with '-')", a));
    if (option && option->get_items_expected_max() > 0 && a.find('=') == std::string::npos) ++i;
  }
  return args;
}

std::vector<std::string> withoutDashes(std::vector<std::string> words) {
  if (!words.empty() && words.front() == "--") words.erase(words.begin());
  return words;
}

// The launch request once parsed: the program, and what the table's raw values mean.
LaunchRequest launchRequest(Parsed& p, const CLI::App& app, const std::vector<std::string>& argv) {
  auto r = std::move(p.launch);
  auto& o = r.options;
  o.program = withoutDashes(app.remaining());
  if (app.count("--np")) o.np = p.np;
  o.graceSeconds = p.grace;
  o.gpuBinding = !p.noGpuBinding;
  o.logLevel = p.logLevel;
  r.settings.graceSeconds = p.grace;
  r.settings.command = argv;
  if (o.program.empty()) throw ConfigError("no program to run (ddprun [options] [--] PROGRAM [ARGS...]; see --help)");
  return r;
}

}  // namespace

Command parseCommandLine(const std::vector<std::string>& args, std::ostream& out) {
  CLI::App app{kDescription, "ddprun"};
  app.prefix_command();
  Parsed p;
  addLaunchOptions(app, p);
  auto* doctor = addDoctor(app, p.doctor);
  auto* worker =
      app.add_subcommand("worker", "The per-rank worker that mpirun starts (internal): worker -- PROGRAM [ARGS...]");
  worker->group("");
  worker->prefix_command();
  auto normalised = normalise(app, args);
  std::reverse(normalised.begin(), normalised.end());  // CLI11 takes a vector in reverse order
  try {
    app.parse(normalised);
  } catch (const CLI::CallForHelp& e) {
    return PrintedCommand{app.exit(e, out, out)};
  } catch (const CLI::ParseError& e) {
    if (!*doctor) throw ConfigError(fmt::format("{} (see ddprun --help)", e.what()));
    log::get("ddprun doctor")->error("{} (see ddprun doctor --help)", e.what());
    return PrintedCommand{2};
  }
  log::setLevel(log::parseLevel(p.logLevel, "--log-level"));
  if (p.version) {
    out << "ddprun " << DDP_VERSION << "\n";
    return PrintedCommand{0};
  }
  if (*worker) {
    // After "--" CLI11 hands the words to ddprun's own list, not the subcommand's.
    auto program = withoutDashes(worker->remaining());
    return WorkerCommand{program.empty() ? withoutDashes(app.remaining()) : program};
  }
  if (*doctor) return p.doctor;
  std::vector<std::string> argv{"ddprun"};
  argv.insert(argv.end(), args.begin(), args.end());
  return launchRequest(p, app, argv);
}

int ddprunMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& progress) {
  const auto command = parseCommandLine(args, out);
  if (const auto* printed = std::get_if<PrintedCommand>(&command)) return printed->exitCode;
  if (const auto* worker = std::get_if<WorkerCommand>(&command))
    return runWorker(worker->program, WorkerLibraries{&probe::openGpu, &io::resolveIpv4});
  if (const auto* doctor = std::get_if<DoctorOptions>(&command)) {
    try {
      return runDoctor(*doctor, out);
    } catch (const Error& e) {  // the doctor's own errors carry its name
      log::get("ddprun doctor")->error("{}", e.what());
      return exitCodeFor(e);
    }
  }
  return launch(std::get<LaunchRequest>(command), out, progress);
}

}  // namespace ddp::launcher
