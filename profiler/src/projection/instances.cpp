#include "ddp/profiler/projection/instances.hpp"

#include "ddp/common/error.hpp"
#include "text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <regex>

namespace ddp::profiler {

extern const char* const kInstanceCatalogJson;  // generated from profiler/data/instances.json

namespace {

using detail::lower;

const nlohmann::json& catalogJson() {
  static const auto data = nlohmann::json::parse(kInstanceCatalogJson);
  return data;
}

std::vector<InstanceFamily> parseCatalog() {
  std::vector<InstanceFamily> out;
  for (const auto& f : catalogJson().at("families")) {
    InstanceFamily family;
    family.family = f.at("family").get<std::string>();
    family.gpu = f.at("gpu").get<std::string>();
    family.gpuMemoryGb = f.at("gpu_memory_gb").get<int>();
    family.otherGpus = f.at("other_gpus").get<std::vector<std::string>>();
    family.nvlink = f.at("nvlink").get<bool>();
    family.bareMetal = f.at("bare_metal").get<bool>();
    family.traits = f.at("traits").get<std::string>();
    family.use = f.at("use").get<std::string>();
    family.intraLink = f.at("intra_link").get<std::string>();
    out.push_back(std::move(family));
  }
  return out;
}

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The entry of `items` whose key(item) is `name` (case-insensitive), else ConfigError:
// "<what>: unknown <noun> '<name>' (did you mean X? known: ...)".
template <typename T, typename Key>
const T& findNamed(const std::vector<T>& items, const std::string& name, Key key, const std::string& what,
                   const char* noun) {
  std::vector<std::string> known;
  for (const auto& item : items) {
    if (lower(key(item)) == lower(name)) return item;
    known.push_back(key(item));
  }
  throw ConfigError(fmt::format("{}: unknown {} '{}' (did you mean {}? known: {})", what, noun, name,
                                nearestName(name, known), joined(known)));
}

const InstanceFamily& findFamily(const std::string& family, const std::string& name) {
  return findNamed(
      instanceCatalog(), family, [](const InstanceFamily& f) { return f.family; }, fmt::format("instance '{}'", name),
      "family");
}

std::vector<GpuSpec> parseGpus() {
  std::vector<GpuSpec> out;
  for (const auto& g : catalogJson().at("gpus"))
    out.push_back({g.at("gpu").get<std::string>(), g.at("fp32_tflops").get<double>(), g.at("fp16_tflops").get<double>(),
                   g.at("source").get<std::string>()});
  return out;
}

std::vector<LinkSpec> parseLinks() {
  std::vector<LinkSpec> out;
  for (const auto& l : catalogJson().at("links"))
    out.push_back({l.at("link").get<std::string>(), l.at("kind").get<std::string>(), l.at("gbytes_per_s").get<double>(),
                   l.at("source").get<std::string>()});
  return out;
}

std::vector<LinkKind> parseLinkKinds() {
  std::vector<LinkKind> out;
  for (const auto& k : catalogJson().at("link_kinds"))
    out.push_back({k.at("kind").get<std::string>(), k.at("where").get<std::string>() == "inter",
                   k.at("step_latency_us").get<double>(), k.at("source").get<std::string>()});
  return out;
}

}  // namespace

const std::vector<InstanceFamily>& instanceCatalog() {
  static const std::vector<InstanceFamily> catalog = parseCatalog();
  return catalog;
}

const std::vector<GpuSpec>& gpuCatalog() {
  static const std::vector<GpuSpec> gpus = parseGpus();
  return gpus;
}

const std::vector<LinkSpec>& linkCatalog() {
  static const std::vector<LinkSpec> links = parseLinks();
  return links;
}

const std::vector<LinkKind>& linkKinds() {
  static const std::vector<LinkKind> kinds = parseLinkKinds();
  return kinds;
}

const CollectiveModel& collectiveModel() {
  static const CollectiveModel model = [] {
    const auto& c = catalogJson().at("collective");
    return CollectiveModel{c.at("base_latency_us").get<double>(), c.at("gpu_link_efficiency").get<double>(),
                           c.at("source").get<std::string>()};
  }();
  return model;
}

const GpuSpec& findGpu(const std::string& name, const std::string& what) {
  const std::string full = lower(name).rfind("nvidia ", 0) == 0 ? name : "NVIDIA " + name;
  return findNamed(
      gpuCatalog(), full, [](const GpuSpec& g) { return g.gpu; }, what, "GPU");
}

const LinkKind& findLinkKind(const std::string& kind, const std::string& what) {
  return findNamed(
      linkKinds(), kind, [](const LinkKind& k) { return k.kind; }, what, "link kind");
}

const LinkSpec& findLink(const std::string& link) {
  return findNamed(
      linkCatalog(), link, [](const LinkSpec& l) { return l.link; }, "the instance catalog", "link");
}

std::string nearestName(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t bestDistance = SIZE_MAX;
  for (const auto& k : known) {
    const size_t d = editDistance(lower(name), lower(k));
    if (d < bestDistance) bestDistance = d, best = k;
  }
  return best;
}

Instance decodeInstance(const std::string& name) {
  static const std::regex full(R"(^(?:ecs\.)?([a-z][a-z0-9]*)-c([0-9]{1,4})g([0-9]{1,3})\.([0-9]{0,3}x?large)$)");
  static const std::regex bare(R"(^(?:ecs\.)?([a-z][a-z0-9]*)$)");
  Instance out;
  out.name = name;
  std::smatch m;
  if (std::regex_match(name, m, full)) {
    out.family = findFamily(m[1].str(), name);
    out.vcpus = std::stoi(m[2].str());
    out.gpus = std::stoi(m[3].str());
    out.size = m[4].str();
    if (*out.vcpus == 0 || *out.gpus == 0)
      throw ConfigError(
          fmt::format("instance '{}': {} vCPUs and {} GPUs is not an instance", name, *out.vcpus, *out.gpus));
    return out;
  }
  if (std::regex_match(name, m, bare)) {
    out.family = findFamily(m[1].str(), name);
    return out;
  }
  throw ConfigError(
      fmt::format("instance '{}' is not an instance name: expected ecs.<family>-c<vCPUs>g<GPUs>.<size> "
                  "(e.g. ecs.gn7i-c16g1.16xlarge) or a family (e.g. gn7e)",
                  name));
}

nlohmann::json toJson(const Instance& i) {
  return {{"name", i.name},
          {"family", i.family.family},
          {"gpu", i.family.gpu},
          {"gpu_memory_gb", i.family.gpuMemoryGb},
          {"nvlink", i.family.nvlink},
          {"bare_metal", i.family.bareMetal},
          {"vcpus", i.vcpus ? nlohmann::json(*i.vcpus) : nlohmann::json(nullptr)},
          {"gpus", i.gpus ? nlohmann::json(*i.gpus) : nlohmann::json(nullptr)},
          {"size", i.size.empty() ? nlohmann::json(nullptr) : nlohmann::json(i.size)},
          {"traits", i.family.traits},
          {"use", i.family.use}};
}

std::string describe(const Instance& i) {
  std::string out = fmt::format("{} ({} {} GB{}{})", i.family.family, i.family.gpu, i.family.gpuMemoryGb,
                                i.family.nvlink ? ", NVLink" : "", i.family.bareMetal ? ", bare metal" : "");
  if (i.vcpus) out += fmt::format(", {} vCPUs, {} GPU{}, {}", *i.vcpus, *i.gpus, *i.gpus == 1 ? "" : "s", i.size);
  return out;
}

}  // namespace ddp::profiler
