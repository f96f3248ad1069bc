#pragma once
// Gradient bucket assignment for DistributedDataParallel (docs/ddp.md), LibTorch-free so it is
// unit-tested on its own.

#include "ddp/comm/types.hpp"

#include <cstddef>
#include <vector>

namespace ddp::comm {

struct BucketParam {
  size_t bytes = 0;
  DType dtype = DType::kFloat32;
  int device = -1;  // -1: host; buckets never mix devices or dtypes
};

struct Bucket {
  std::vector<size_t> params;  // indices into the list given, in the order given
  DType dtype = DType::kFloat32;
  int device = -1;
  size_t bytes = 0;
};

// Groups parameters, given in the order their gradients are expected to become ready
// (PyTorch's: reverse registration order), into buckets of at least `capBytes` — the first
// bucket of each dtype/device at least `firstCapBytes`, so the first allreduce starts early —
// closing a bucket as soon as it reaches its cap. A parameter is never split. Buckets come out
// ordered by their first parameter, which is the order every rank launches them in.
std::vector<Bucket> assignBuckets(const std::vector<BucketParam>& params, size_t firstCapBytes, size_t capBytes);

}  // namespace ddp::comm
