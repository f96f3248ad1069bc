#pragma once
// Datasets and the distributed sampler of the train example.

#include "train.hpp"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace ddp::train {

// Read-only after construction; load() may be called from any thread.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual SampleShape shape() const = 0;
  virtual std::string describe() const = 0;
  // x: [n, C, H, W] float32, normalised; y: [n] int64 class labels.
  virtual void load(const std::vector<int64_t>& indices, torch::Tensor& x, torch::Tensor& y) const = 0;
};

// spec: "synthetic", "cifar10:DIR" or "mnist:DIR". Synthetic samples are MNIST-shaped for the
// MLP and CIFAR-shaped otherwise, generated from (seed, index) alone. Throws ConfigError naming
// the file and what was expected when a directory does not hold the standard files.
std::unique_ptr<Dataset> openDataset(const std::string& spec, const std::string& model, int64_t syntheticSize,
                                     uint64_t seed);

// Which samples each rank takes. Every epoch is a permutation of the dataset drawn from
// (seed, epoch); global step s takes the next worldSize * accumulate * batch samples of it
// (the remainder of an epoch is dropped), and rank r takes the r-th contiguous share, split
// into micro-batches. The union over ranks depends only on the global batch size, so runs with
// the same global batch on different world sizes see the same samples per step.
class ShardSampler {
 public:
  ShardSampler(int64_t datasetSize, int64_t batch, int64_t accumulate, int worldSize, uint64_t seed);
  int64_t globalBatch() const { return batch_ * accumulate_ * worldSize_; }
  int64_t stepsPerEpoch() const { return datasetSize_ / globalBatch(); }
  std::vector<int64_t> indices(int64_t step, int rank, int64_t micro) const;

 private:
  const std::vector<int64_t>& permutation(int64_t epoch) const;

  int64_t datasetSize_, batch_, accumulate_;
  int worldSize_;
  uint64_t seed_;
  mutable int64_t cachedEpoch_ = -1;
  mutable std::vector<int64_t> permutation_;
};

}  // namespace ddp::train
