#pragma once
// Where a rank's step timings came from (docs/timings.md, "Source"): timings/rank-NNNNN.source.json
// (RunLayout::timingsSource), written by the C++ step timer (source "cpp") or by ddprun's Python
// package ("python-auto", "python-api"; docs/python.md), read by the profiler. A Python rank that
// could not be followed says so here (instrumented false, with the reason), and its DataLoaders'
// settings come with it for the data-loader diagnosis.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp {

struct DataLoaderFacts {
  int numWorkers = 0;
  bool pinMemory = false;
  std::optional<int64_t> batchSize;
  bool persistentWorkers = false;
  std::optional<int64_t> prefetchFactor;
  int64_t batches = 0;  // batches the rank took from it
  double waitMs = 0;    // time the rank was blocked in its iterator
  std::optional<int64_t> datasetSize;
};

struct TimingSource {
  int rank = 0;
  std::string source;  // "cpp", "python-auto", "python-api"
  bool instrumented = true;
  std::string reason;   // why not, when not
  std::string runtime;  // "torch 1.13.0 (Python 3.11.2)"
  std::string device;   // "cpu", "cuda:0"
  std::vector<DataLoaderFacts> dataloaders;
  std::vector<std::string> notes;  // what could not be followed exactly

  // The loader the rank took most batches from (the training one), if any.
  const DataLoaderFacts* busiestLoader() const;
};

nlohmann::json toJson(const TimingSource& source);
// ConfigError naming the field for a record that is not one (the caller names the file).
TimingSource timingSourceFromJson(const nlohmann::json& json);

}  // namespace ddp
