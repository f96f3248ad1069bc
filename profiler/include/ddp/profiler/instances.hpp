#pragma once
// The GPU instance catalog (profiler/data/instances.json, from ../shared/gpu-guide.md) and the
// decoder of instance names such as ecs.gn7i-c16g1.16xlarge (docs/compare.md). Hardware facts
// only: prices always come from the user.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler {

struct InstanceFamily {
  std::string family, gpu, traits, use;
  int gpuMemoryGb = 0;
  std::vector<std::string> otherGpus;
  bool nvlink = false, bareMetal = false;
};

struct Instance {
  std::string name;  // as given
  InstanceFamily family;
  std::optional<int> vcpus, gpus;  // absent when only a family was given
  std::string size;                // "16xlarge"; empty when only a family was given
};

// The built-in catalog, in the data file's order.
const std::vector<InstanceFamily>& instanceCatalog();

// "ecs.gn7i-c16g1.16xlarge", "gn7i-c16g1.16xlarge" or a bare family ("gn7e"). Throws ConfigError
// with a one-line reason (the expected shape, or the nearest known family) otherwise.
Instance decodeInstance(const std::string& name);

nlohmann::json toJson(const Instance& instance);
// "gn7i (NVIDIA A10 24 GB), 16 vCPUs, 1 GPU, 16xlarge"
std::string describe(const Instance& instance);

}  // namespace ddp::profiler
