#pragma once
// ddprun's command line (docs/launcher.md): one CLI11 table for the launch options, and the
// subcommands `doctor` and `worker` (the per-rank worker mpirun starts). Everything from
// PROGRAM on belongs to the program and is never read as ddprun's.

#include "ddp/launcher/doctor.hpp"
#include "ddp/launcher/launch.hpp"

#include <ostream>
#include <string>
#include <variant>
#include <vector>

namespace ddp::launcher {

struct WorkerCommand {
  std::vector<std::string> program;
};
// What was printed instead of running anything (--help, --version), and the exit code.
struct PrintedCommand {
  int exitCode = 0;
};
using Command = std::variant<LaunchRequest, DoctorOptions, WorkerCommand, PrintedCommand>;

// Parses ddprun's arguments (without argv[0]); sets the log level (--log-level). Help and the
// version are written to `out`. ConfigError (exit 2) for an unknown option before PROGRAM, a
// bad value or a missing program.
Command parseCommandLine(const std::vector<std::string>& args, std::ostream& out);

// The whole of ddprun: parse, then launch, run the doctor or the worker. Exit code.
int ddprunMain(const std::vector<std::string>& argv, std::ostream& out, std::ostream& progress);

}  // namespace ddp::launcher
