#include "ddp/comm/buckets.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace ddp::comm {

std::vector<Bucket> assignBuckets(const std::vector<BucketParam>& params, size_t firstCapBytes, size_t capBytes) {
  struct Open {
    Bucket bucket;
    bool first = true;
  };
  std::map<std::pair<int, int>, Open> open;  // (dtype, device) -> the bucket being filled
  std::vector<Bucket> done;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    auto& slot = open[{static_cast<int>(p.dtype), p.device}];
    slot.bucket.dtype = p.dtype;
    slot.bucket.device = p.device;
    slot.bucket.params.push_back(i);
    slot.bucket.bytes += p.bytes;
    if (slot.bucket.bytes >= (slot.first ? firstCapBytes : capBytes)) {
      done.push_back(std::move(slot.bucket));
      slot.bucket = Bucket{};
      slot.first = false;
    }
  }
  for (auto& [key, slot] : open)
    if (!slot.bucket.params.empty()) done.push_back(std::move(slot.bucket));
  std::sort(done.begin(), done.end(),
            [](const Bucket& a, const Bucket& b) { return a.params.front() < b.params.front(); });
  return done;
}

}  // namespace ddp::comm
