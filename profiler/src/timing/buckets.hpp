#pragma once
// A step's gradient buckets as the network saw them (internal to the profiler): each bucket's
// transfer is its shortest duration over the ranks (the last rank to launch it waited for nobody).

#include "ddp/common/step_record.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace ddp::profiler::detail {

// bucket -> (bytes, the shortest launch-to-completion time over the ranks, ms)
inline std::map<int, std::pair<uint64_t, double>> bucketTransfers(const std::map<int, const StepRecord*>& ranks) {
  std::map<int, std::pair<uint64_t, double>> buckets;
  for (const auto& [rank, r] : ranks)
    for (const auto& c : r->collectives) {
      if (c.op != CollectiveOp::kAllreduce || c.bucket < 0) continue;
      auto [it, fresh] = buckets.try_emplace(c.bucket, c.bytes, c.durationMs);
      if (!fresh) it->second.second = std::min(it->second.second, c.durationMs);
    }
  return buckets;
}

// nccl-tests' bus bandwidth of an allreduce of `bytes` over n ranks in ms (GB/s), and the time
// (ms) such an allreduce takes at a bus bandwidth.
inline double allreduceBusbwGbps(uint64_t bytes, double n, double ms) {
  return static_cast<double>(bytes) * 2 * (n - 1) / n / (ms / 1e3) / 1e9;
}
inline double allreduceMs(uint64_t bytes, double n, double busbwGbps) {
  return static_cast<double>(bytes) * 2 * (n - 1) / n / (busbwGbps * 1e9) * 1e3;
}

}  // namespace ddp::profiler::detail
