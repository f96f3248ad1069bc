#pragma once
// What a run directory holds, loaded for analysis (docs/profiler.md): timings/*.jsonl,
// ranks/*.exit.json, run.json and nccl/*.log. Bad input is collected as problems naming the
// file and line; what is sound is still loaded.

#include "ddp/comm/timings.hpp"
#include "ddp/profiler/nccl_facts.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler {

struct RankExit {
  int rank = -1;
  std::optional<int> exitCode, signal;
  std::string host;
  bool culprit = false;  // the launcher named this rank the first failure
  bool failed() const { return (exitCode && *exitCode != 0) || signal.has_value(); }
};

struct RunData {
  std::string dir;
  std::map<int, std::vector<comm::StepRecord>> timings;  // rank -> records in step order
  std::vector<RankExit> exits;
  std::optional<int> worldSize;       // run.json "np", else the records' world_size
  std::vector<std::string> command;   // run.json "command": program and arguments
  std::optional<NcclFacts> nccl;      // when nccl/*.log exist
  std::vector<std::string> problems;  // "file:line: what", in reading order
};

// Throws ConfigError when dir is not a directory or holds none of the run files.
RunData loadRun(const std::string& dir);

// The value of `--name VALUE` or `--name=VALUE` in a command, if any.
std::optional<std::string> commandOption(const std::vector<std::string>& command, const std::string& name);

}  // namespace ddp::profiler
