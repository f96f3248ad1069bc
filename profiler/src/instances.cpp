#include "ddp/profiler/instances.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

namespace ddp::profiler {

extern const char* const kInstanceCatalogJson;  // generated from profiler/data/instances.json

namespace {

std::vector<InstanceFamily> parseCatalog() {
  std::vector<InstanceFamily> out;
  const auto data = nlohmann::json::parse(kInstanceCatalogJson);
  for (const auto& f : data.at("families")) {
    InstanceFamily family;
    family.family = f.at("family").get<std::string>();
    family.gpu = f.at("gpu").get<std::string>();
    family.gpuMemoryGb = f.at("gpu_memory_gb").get<int>();
    family.otherGpus = f.at("other_gpus").get<std::vector<std::string>>();
    family.nvlink = f.at("nvlink").get<bool>();
    family.bareMetal = f.at("bare_metal").get<bool>();
    family.traits = f.at("traits").get<std::string>();
    family.use = f.at("use").get<std::string>();
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

const InstanceFamily& findFamily(const std::string& family, const std::string& name) {
  const auto& catalog = instanceCatalog();
  for (const auto& f : catalog)
    if (f.family == family) return f;
  const auto nearest = std::min_element(catalog.begin(), catalog.end(), [&](const auto& x, const auto& y) {
    return editDistance(family, x.family) < editDistance(family, y.family);
  });
  std::string known;
  for (const auto& f : catalog) known += (known.empty() ? "" : ", ") + f.family;
  throw ConfigError(fmt::format("instance '{}': unknown family '{}' (did you mean {}? known: {})", name, family,
                                nearest->family, known));
}

}  // namespace

const std::vector<InstanceFamily>& instanceCatalog() {
  static const std::vector<InstanceFamily> catalog = parseCatalog();
  return catalog;
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
