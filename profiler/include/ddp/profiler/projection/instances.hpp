#pragma once
// The GPU instance catalog (profiler/data/instances.json, from Alibaba Cloud's documentation as
// ../shared/alibaba-instances.md collects it, every figure with its source) and the decoder of real
// instance names: ecs.gn7e-c16g1.32xlarge, ecs.ebmgn7ex.32xlarge, ecs.gn8v-2x.12xlarge,
// ecs.vgn6i-m4-vws.xlarge, ecs.gn8v-tee-8x.16xlarge (docs/compare.md, "Instance names"). Hardware
// facts only: prices always come from the user. A figure the vendor does not publish is absent.

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler {

// One instance type of a family: "c16g1.32xlarge" of gn7e, "32xlarge" of ebmgn7ex, "m4.xlarge" of
// vgn6i. vCPUs and memory come from the vendor's table, never from the name.
struct InstanceSize {
  std::string key;  // what follows the family in the name, qualifier and size: "2x.12xlarge"
  int vcpus = 0;
  double memoryGib = 0;
  std::optional<int> gpus;            // whole GPUs; absent for a vGPU slice
  std::string gpuShare;               // a vGPU slice: "1/4" of the family's GPU; "" where not published
  std::optional<double> gpuMemoryGb;  // a vGPU slice's memory
  std::optional<double> networkGbps;  // the baseline VPC bandwidth
};

struct InstanceFamily {
  std::string family;              // "gn7e", "sgn7i-vws", "gn8v-tee"
  std::string kind;                // gpu, vgpu (fractional GPUs) or unpublished (known only by name)
  std::string gpu;                 // "NVIDIA A100"; "" where the vendor does not name it
  std::optional<int> gpuMemoryGb;  // per whole GPU
  std::string intraLink;           // the link between its GPUs (a LinkSpec's name); "" if unpublished
  bool bareMetal = false;
  std::optional<bool> erdma;        // ERIs (eRDMA between hosts); absent where not published
  std::optional<double> erdmaGbps;  // the family's published eRDMA bandwidth ("up to")
  std::string rdmaKind;             // "scc-roce": the SCC families' separate RoCE network
  std::optional<double> rdmaGbps;
  std::vector<InstanceSize> sizes;
  std::map<std::string, std::string> sources;  // figure -> its source (keys S1... in the catalog)
  std::string notes;
  bool suffixAfterQualifier = false;  // its -vws after -mM in a type's name (vgn6i-vws)
  // nvlink, nvswitch or pcie, from the link; "" where unknown.
  std::string linkClass() const;
};

struct Instance {
  std::string name;  // as given
  InstanceFamily family;
  std::optional<InstanceSize> size;  // absent when only a family was given, or the family is unpublished
  std::string sizeKey;               // as given ("c16g1.32xlarge"); empty for a bare family
  std::optional<int> gpus() const { return size ? size->gpus : std::nullopt; }
  bool vgpu() const { return family.kind == "vgpu"; }
};

// The built-in catalog, in the data file's order.
const std::vector<InstanceFamily>& instanceCatalog();
// The catalog's source keys: "S1" -> the document.
const std::map<std::string, std::string>& instanceSources();

// The figures `ddprof project` needs (docs/projection.md), each with its public source.
struct GpuSpec {
  std::string gpu;                               // "NVIDIA A100"
  std::optional<double> fp32Tflops, fp16Tflops;  // absent where no datasheet figure is at hand
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

// A real name of any shape (docs/compare.md), with or without "ecs.", or a bare family ("gn7e").
// Throws ConfigError with one line: the shape expected, or the nearest real family or type.
Instance decodeInstance(const std::string& name);

// A type's name as the vendor writes it: ecs. + family + qualifier + size (ecs.gn8v-2x.12xlarge,
// ecs.vgn6i-m4-vws.xlarge).
std::string typeName(const InstanceFamily& family, const std::string& sizeKey);

// The instance a run recorded (run.json's, from ddprun --instance): none when it recorded none or
// its name no longer decodes.
std::optional<Instance> recordedInstance(const std::string& name);

// The family's GPU as a device: its model, or "the unnamed GPU of <family>".
std::string deviceName(const InstanceFamily& family);

// Every type of the catalog (a family known only by name as itself), in its order.
std::vector<Instance> catalogInstances();

// One object per name: name, family, kind, gpu, gpu_memory_gb, gpus, vcpus, memory_gib,
// bare_metal, intra_link (nvlink / nvswitch / pcie), erdma, network_gbps, sources, and the rest.
nlohmann::json toJson(const Instance& instance);
// "gn7e c16g1.32xlarge: 8 x NVIDIA A100 80 GB, NVLink, 128 vCPUs, 1000 GiB, 64 Gbit/s"
std::string describe(const Instance& instance);

}  // namespace ddp::profiler
