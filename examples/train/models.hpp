#pragma once
// The example models: an MLP, a small CNN (no BatchNorm, so data-parallel runs match a single
// process exactly) and the CIFAR-10 ResNets (3x3 stem, no max-pool).

#include "train.hpp"

#include <torch/torch.h>

namespace ddp::train {

struct Net : torch::nn::Module {
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

inline constexpr int64_t kClasses = 10;

// Throws ConfigError for an unknown name.
std::shared_ptr<Net> makeModel(const std::string& name, const SampleShape& shape, const std::vector<int64_t>& hidden);

}  // namespace ddp::train
