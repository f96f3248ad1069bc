#pragma once
// The one sweep engine behind ddpbench: for each size, check (optional), warm up, time,
// take the slowest rank's time, count wrong elements over all ranks.

#include "ddp/comm/backend.hpp"
#include "ddp/comm/bench/collectives.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ddp::comm::bench {

struct SweepOptions {
  uint64_t minBytes = 8;
  uint64_t maxBytes = uint64_t{128} << 20;
  double factor = 2.0;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  DType dtype = DType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
};

// One measured configuration (one table row half, one JSON row).
struct Result {
  std::string op;
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::string type;
  std::string redop;  // "none" for collectives without one
  int root = -1;      // -1 for collectives without one
  bool inPlace = false;
  double timeUs = 0;  // per iteration, slowest rank
  double algbwGBps = 0;
  double busbwGBps = 0;
  int64_t wrong = 0;  // -1: not checked
};

// The sizes of a sweep: min, min*factor, ... up to max (each at least one more than the last).
std::vector<uint64_t> sweepSizes(const SweepOptions& options);

// Throws ConfigError for unusable options (factor ≤ 1, min > max, iters < 1, bad root).
void validate(const SweepOptions& options, int nranks);

// Runs the sweep of `collective`; `onSize` gets each size's out-of-place and (when supported)
// in-place results as they are measured. Collective: every rank calls it identically.
void runSweep(Backend& backend, const Collective& collective, const SweepOptions& options,
              const std::function<void(const Result&, const std::optional<Result>&)>& onSize);

}  // namespace ddp::comm::bench
