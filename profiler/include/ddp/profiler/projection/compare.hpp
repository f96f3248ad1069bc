#pragma once
// `ddprof compare RUN_A RUN_B`: the A/B table for choosing an instance — ranks, hosts,
// transports, step time, throughput, efficiency, exposed communication, busbw, findings and,
// with prices per instance-hour, cost per 1 M samples and per epoch (docs/compare.md).

#include "ddp/profiler/diagnosis/findings.hpp"
#include "ddp/profiler/projection/instances.hpp"
#include "ddp/profiler/projection/projection.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler {

struct CompareSide {
  std::string label;                   // empty: the run directory's name
  std::optional<Instance> instance;    // else the run's own (run.json, from ddprun --instance)
  std::optional<double> pricePerHour;  // per instance-hour, in the user's currency
};

struct CompareOptions {
  CompareSide a, b;
  std::optional<int64_t> datasetSize;  // samples per epoch, for the cost of an epoch
  std::vector<std::string> projectTo;  // targets to project both runs onto (docs/projection.md)
};

struct RunSummary {
  std::string dir, label;
  std::optional<Instance> instance;
  int ranks = 0, instances = 0;  // instances: the hosts the ranks ran on (at least 1)
  std::vector<std::string> hosts;
  std::vector<std::string> transports;  // NCCL transport classes seen ("P2P", "NET/IB", ...)
  std::optional<std::string> network;   // NCCL's network (IB, Socket, ...)
  std::string backend;                  // the program's --backend, when given
  bool timed = false;                   // step timings were found
  double stepMs = 0, samplesPerSecond = 0, samplesPerRankPerSecond = 0;
  int64_t samplesPerStep = 0;
  double exposedCommShare = 0;
  double parallelEfficiency = 0;    // 1 - exposed communication share (docs/compare.md)
  std::optional<double> busbwGbps;  // ddpbench's allreduce at its largest size, when in the run dir
  int64_t busbwBytes = 0;
  std::vector<Finding> findings;
  std::optional<double> pricePerHour, costPerHour, costPerMillionSamples, epochHours, costPerEpoch;
  std::vector<std::string> missing;            // what this run lacks for a full comparison
  std::optional<ProjectionReport> projection;  // onto CompareOptions::projectTo, when it could be projected
};

struct Comparison {
  RunSummary a, b;
  std::optional<int64_t> datasetSize;
  std::vector<std::string> projectTo;
  std::vector<std::string> verdict;  // the answer, in sentences: faster, cheaper, why
};

// Throws ConfigError when the runs are not the same job (notTheSameJob) or have nothing to compare.
Comparison compareRuns(const RunData& a, const RunData& b, const CompareOptions& options);

nlohmann::json compareJson(const Comparison& c);
std::string renderCompareText(const Comparison& c);
std::string renderCompareMarkdown(const Comparison& c);
std::string renderCompareHtml(const Comparison& c);

// A price or size given on the command line: a finite number > 0, else ConfigError naming the option.
double parsePositive(const std::string& text, const std::string& option);

}  // namespace ddp::profiler
