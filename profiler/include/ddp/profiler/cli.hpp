#pragma once
// ddprof's command line (docs/profiler.md): the subcommands nccl, report, scaling and compare,
// each an options struct and a run function; the report, table or JSON goes to `out`, and what
// could not be read goes to the "ddprof" logger.

#include <ostream>
#include <string>
#include <vector>

namespace ddp::profiler {

// Parses ddprof's arguments (without argv[0]) and runs the subcommand; returns the exit code
// (2 for bad input: ConfigError, or a bad flag).
int ddprofMain(const std::vector<std::string>& args, std::ostream& out);

}  // namespace ddp::profiler
