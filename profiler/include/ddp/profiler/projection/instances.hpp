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
  std::string intraLink;  // the link between its GPUs (a LinkSpec's name)
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

// The figures `ddprof project` needs (docs/projection.md), each with its public source.
struct GpuSpec {
  std::string gpu;  // "NVIDIA A100"
  double fp32Tflops = 0, fp16Tflops = 0;
  std::string source;
};
struct LinkSpec {
  std::string link, kind;  // "nvlink-a100", "nvlink"
  double gbytesPerS = 0;   // each way
  std::string source;
};
struct LinkKind {
  std::string kind;  // nvlink, pcie, shm, loopback (within a host); ib, erdma, socket (between hosts)
  bool interHost = false;
  double stepLatencyUs = 0;  // per ring step
  std::string source;
};
struct CollectiveModel {
  double baseLatencyUs = 0;
  double gpuLinkEfficiency = 1;  // the share of a link's rate NCCL reaches
  std::string source;
};
const std::vector<GpuSpec>& gpuCatalog();
const std::vector<LinkSpec>& linkCatalog();
const std::vector<LinkKind>& linkKinds();
const CollectiveModel& collectiveModel();
// By name, case-insensitive: a GPU as "A100" or "NVIDIA A100", a link kind as "erdma". Throw
// ConfigError naming `what` and the nearest known one.
const GpuSpec& findGpu(const std::string& name, const std::string& what);
const LinkKind& findLinkKind(const std::string& kind, const std::string& what);
const LinkSpec& findLink(const std::string& link);
// The known name nearest to `name` (edit distance).
std::string nearestName(const std::string& name, const std::vector<std::string>& known);

// "ecs.gn7i-c16g1.16xlarge", "gn7i-c16g1.16xlarge" or a bare family ("gn7e"). Throws ConfigError
// with a one-line reason (the expected shape, or the nearest known family) otherwise.
Instance decodeInstance(const std::string& name);

nlohmann::json toJson(const Instance& instance);
// "gn7i (NVIDIA A10 24 GB), 16 vCPUs, 1 GPU, 16xlarge"
std::string describe(const Instance& instance);

}  // namespace ddp::profiler
