#pragma once
// What a run directory holds (ddp::RunLayout), loaded for analysis (docs/profiler.md): the
// step records, exit records, run.json, utilisation samples, NCCL logs and ddpbench results.
// Bad input is collected as problems naming the file and line; what is sound is still loaded.

#include "ddp/common/rank_exit.hpp"
#include "ddp/common/run_manifest.hpp"
#include "ddp/common/step_record.hpp"
#include "ddp/common/timing_source.hpp"
#include "ddp/common/util_sample.hpp"
#include "ddp/profiler/nccl/facts.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ddp::profiler {

// One row of a ddpbench --json file found in the run directory (docs/ddpbench.md).
struct BenchRow {
  std::string backend, op;
  int nranks = 0;
  int64_t bytes = 0;
  double timeUs = 0, algbwGbps = 0, busbwGbps = 0;
};

// What one attempt of a restarted job got through, from its timings (attempts/K/timings for the
// earlier ones, timings/ for the last).
struct AttemptSteps {
  int attempt = 0;
  std::optional<int64_t> firstStep, lastStep;  // none: the attempt wrote no timings
  double stepSeconds = 0;                      // rank 0's (else the lowest rank's) step time, summed
  int64_t samplesPerStep = 0;                  // over all ranks
  int ranks = 0;                               // that wrote timings
  std::optional<std::string> lostHost;         // run.json: the host the attempt lost (its failure)
};

struct RunData {
  std::string dir;
  std::map<int, std::vector<StepRecord>> timings;  // rank -> records in step order
  std::vector<RankExitRecord> exits;
  std::optional<int> worldSize;      // run.json "np", else the records' world_size
  std::vector<std::string> command;  // run.json "command": program and arguments
  std::string instance;              // run.json "instance" "name" (ddprun --instance), if given
  // run.json "environment" with "rank_environment" over it: what the ranks were started with
  // (secrets left out), e.g. OMP_NUM_THREADS.
  std::map<std::string, std::string> environment;
  std::optional<NcclFacts> nccl;  // when nccl/*.log exist
  std::set<std::string> hosts;    // where ranks ran: exit records, else run.json "hosts", else NCCL
  std::vector<BenchRow> bench;    // ddpbench*.json in the run directory
  std::map<int, std::vector<UtilSample>> utilisation;  // rank -> samples in time order
  std::map<int, TimingSource> sources;                 // rank -> where its timings came from (source.json)
  std::vector<AttemptSteps> attempts;                  // when the job was restarted: every attempt, in order
  std::optional<std::string> lostHost;                 // run.json "lost_host": the host the (last) attempt lost
  std::vector<std::string> problems;                   // "file:line: what", in reading order
};

// Throws ConfigError when dir is not a directory or holds none of the run files.
RunData loadRun(const std::string& dir);

// The rows of a ddpbench --json result; "FILE: what" in `problems` for a file that is not one.
std::vector<BenchRow> loadBenchFile(const std::string& file, std::vector<std::string>& problems);

// ddpbench's allreduce rows in the run directory: those of the run's own --backend when there are
// some (main-job.sh leaves an mpi and a gloo sweep beside a run of one of them), else all.
std::vector<BenchRow> allreduceBench(const RunData& run);
// Of those, the row at the size nearest `bytes` (on a log scale), if any.
std::optional<BenchRow> nearestAllreduceBench(const RunData& run, uint64_t bytes);
// Of those, the largest size and its bus bandwidth (the better of in and out of place), if any.
std::optional<std::pair<int64_t, double>> largestAllreduceBusbw(const RunData& run);

// The value of `--name VALUE` or `--name=VALUE` in a command, if any.
std::optional<std::string> commandOption(const std::vector<std::string>& command, const std::string& name);

}  // namespace ddp::profiler
