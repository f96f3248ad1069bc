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

// Ordered: a family's sizes keep the vendor's order.
using Json = nlohmann::ordered_json;

const Json& catalogJson() {
  static const auto data = Json::parse(kInstanceCatalogJson);
  return data;
}

template <typename T>
std::optional<T> optional(const Json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

std::string stringOr(const Json& j, const char* key) { return optional<std::string>(j, key).value_or(""); }

InstanceSize parseSize(const std::string& key, const Json& s) {
  InstanceSize size;
  size.key = key;
  size.vcpus = s.at("vcpus").get<int>();
  size.memoryGib = s.at("memory_gib").get<double>();
  size.gpus = optional<int>(s, "gpus");
  size.gpuShare = stringOr(s, "gpu_share");
  size.gpuMemoryGb = optional<double>(s, "gpu_memory_gb");
  size.networkGbps = optional<double>(s, "network_gbps");
  return size;
}

std::vector<InstanceFamily> parseCatalog() {
  std::vector<InstanceFamily> out;
  for (const auto& f : catalogJson().at("families")) {
    InstanceFamily family;
    family.family = f.at("family").get<std::string>();
    family.kind = f.at("kind").get<std::string>();
    family.gpu = stringOr(f, "gpu");
    family.gpuMemoryGb = optional<int>(f, "gpu_memory_gb");
    family.intraLink = stringOr(f, "intra_link");
    family.bareMetal = f.at("bare_metal").get<bool>();
    family.erdma = optional<bool>(f, "erdma");
    family.erdmaGbps = optional<double>(f, "erdma_gbps");
    if (const auto& rdma = f.at("rdma"); !rdma.is_null()) {
      family.rdmaKind = rdma.at("kind").get<std::string>();
      family.rdmaGbps = rdma.at("gbps").get<double>();
    }
    for (const auto& [key, size] : f.at("sizes").items()) family.sizes.push_back(parseSize(key, size));
    family.sources = f.at("sources").get<std::map<std::string, std::string>>();
    family.notes = stringOr(f, "notes");
    family.suffixAfterQualifier = optional<bool>(f, "suffix_after_qualifier").value_or(false);
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

size_t commonStart(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && std::tolower(a[n]) == std::tolower(b[n])) ++n;
  return n;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The entry of `items` whose key(item) is `name` (case-insensitive), else ConfigError:
// "<what>: unknown <noun> '<name>' (did you mean X? known: ...)", or `instead` of the list of the
// known ones where it is too long for a line.
template <typename T, typename Key>
const T& findNamed(const std::vector<T>& items, const std::string& name, Key key, const std::string& what,
                   const char* noun, const char* instead = nullptr) {
  std::vector<std::string> known;
  for (const auto& item : items) {
    if (lower(key(item)) == lower(name)) return item;
    known.push_back(key(item));
  }
  throw ConfigError(fmt::format("{}: unknown {} '{}' (did you mean {}? {})", what, noun, name, nearestName(name, known),
                                instead ? instead : "known: " + joined(known)));
}

std::vector<GpuSpec> parseGpus() {
  std::vector<GpuSpec> out;
  for (const auto& g : catalogJson().at("gpus"))
    out.push_back({g.at("gpu").get<std::string>(), optional<double>(g, "fp32_tflops"),
                   optional<double>(g, "fp16_tflops"), g.at("source").get<std::string>()});
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
  // A name that a known one starts with is its beginning (gn9: gn9gc), the shortest such first.
  std::string best;
  for (const auto& k : known)
    if (k.size() > name.size() && commonStart(name, k) == name.size() && (best.empty() || k.size() < best.size()))
      best = k;
  if (!best.empty() && !name.empty()) return best;
  size_t bestDistance = SIZE_MAX;
  for (const auto& k : known) {
    // Ties go to the one sharing the longer start with the name (gn8i: gn8is, not gn5i).
    const size_t d = editDistance(lower(name), lower(k));
    if (d < bestDistance || (d == bestDistance && commonStart(name, k) > commonStart(name, best)))
      bestDistance = d, best = k;
  }
  return best;
}

const std::map<std::string, std::string>& instanceSources() {
  static const auto sources = catalogJson().at("sources").get<std::map<std::string, std::string>>();
  return sources;
}

std::string InstanceFamily::linkClass() const {
  if (intraLink.empty()) return "";
  if (intraLink.rfind("nvswitch", 0) == 0) return "nvswitch";
  return findLink(intraLink).kind;
}

// The family's own "-vws"/"-tee" follows its token, or the qualifier where the vendor writes it so
// (suffix_after_qualifier: ecs.vgn6i-m4-vws.xlarge).
std::string typeName(const InstanceFamily& f, const std::string& key) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) return fmt::format("ecs.{}.{}", f.family, key);
  const std::string qualifier = key.substr(0, dot), size = key.substr(dot + 1);
  const auto dash = f.family.find('-');
  if (!f.suffixAfterQualifier || dash == std::string::npos)
    return fmt::format("ecs.{}-{}.{}", f.family, qualifier, size);
  return fmt::format("ecs.{}-{}{}.{}", f.family.substr(0, dash), qualifier, f.family.substr(dash), size);
}

namespace {

const InstanceFamily& familyNamed(const std::string& family, const std::string& name) {
  return findNamed(
      instanceCatalog(), family, [](const InstanceFamily& f) { return f.family; }, fmt::format("instance '{}'", name),
      "family", "`ddprof instances` lists them");
}

InstanceSize sizeNamed(const InstanceFamily& f, const std::string& key, const std::string& name) {
  std::vector<std::string> names, keys;
  for (const auto& s : f.sizes) {
    if (s.key == key) return s;
    names.push_back(typeName(f, s.key));
    keys.push_back(s.key);
  }
  throw ConfigError(fmt::format("instance '{}': {} has no type {} (did you mean {}? its types: {})", name, f.family,
                                key, nearestName(typeName(f, key), names), joined(keys)));
}

}  // namespace

Instance decodeInstance(const std::string& given) {
  // The family token (a GPU body: gn, vgn, sgn, ebmgn, sccgn, or the old ga; its generation and
  // letters), its -vws/-tee, the qualifier (-c<R>g1, -<K>x, -m<M>[s]), a -vws after it, the size.
  static const std::regex type(
      R"(^(?:ecs\.)?((?:ebm|scc|v|s)?g[na][0-9]+[a-z]*)(-vws|-tee)?(?:-(c[0-9]+g1|[0-9]+x|m[0-9]+s?))?(-vws)?)"
      R"(\.([0-9]*xlarge|large)$)");
  static const std::regex bare(R"(^(?:ecs\.)?((?:ebm|scc|v|s)?g[na][0-9]+[a-z]*(?:-vws|-tee)?)$)");
  const std::string name = lower(given);
  Instance out;
  out.name = given;
  std::smatch m;
  if (std::regex_match(name, m, type) && !(m[2].matched && m[4].matched)) {
    out.family = familyNamed(m[1].str() + m[2].str() + m[4].str(), given);
    out.sizeKey = (m[3].matched ? m[3].str() + "." : "") + m[5].str();
    if (out.family.kind == "unpublished") return out;
    out.size = sizeNamed(out.family, out.sizeKey, given);
    const std::string canonical = typeName(out.family, out.sizeKey);
    if (canonical != (name.rfind("ecs.", 0) == 0 ? name : "ecs." + name))
      throw ConfigError(fmt::format("instance '{}': the type is written {}", given, canonical));
    return out;
  }
  if (std::regex_match(name, m, bare)) {
    out.family = familyNamed(m[1].str(), given);
    return out;
  }
  throw ConfigError(fmt::format(
      "instance '{}' is not an instance name: expected ecs.<family>[-c<vCPUs per GPU>g1|-<GPUs>x|-m<GPU GB>].<size> "
      "(e.g. ecs.gn7e-c16g1.32xlarge, ecs.ebmgn7ex.32xlarge, ecs.gn8v-2x.12xlarge, ecs.vgn6i-m4.xlarge) or a family "
      "(e.g. gn7e)",
      given));
}

std::optional<Instance> recordedInstance(const std::string& name) {
  if (name.empty()) return std::nullopt;
  try {
    return decodeInstance(name);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

std::string deviceName(const InstanceFamily& family) {
  return family.gpu.empty() ? "the unnamed GPU of " + family.family : family.gpu;
}

std::vector<Instance> catalogInstances() {
  std::vector<Instance> out;
  for (const auto& f : instanceCatalog()) {
    if (f.sizes.empty()) out.push_back({"ecs." + f.family, f, std::nullopt, ""});
    for (const auto& s : f.sizes) out.push_back({typeName(f, s.key), f, s, s.key});
  }
  return out;
}

namespace {

template <typename T>
nlohmann::json orNull(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json orNull(const std::string& value) {
  return value.empty() ? nlohmann::json(nullptr) : nlohmann::json(value);
}

// A slice's share as a number ("1/4" -> 0.25).
std::optional<double> shareOf(const std::string& share) {
  if (share.empty()) return std::nullopt;
  const auto slash = share.find('/');
  if (slash == std::string::npos) return std::stod(share);
  return std::stod(share.substr(0, slash)) / std::stod(share.substr(slash + 1));
}

// The documents the family's sources cite ("S1" -> its title and address).
nlohmann::json sourceDocuments(const InstanceFamily& f) {
  static const std::regex key(R"(\bS[0-9]+\b)");
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [figure, source] : f.sources)
    for (auto it = std::sregex_iterator(source.begin(), source.end(), key); it != std::sregex_iterator(); ++it)
      if (const auto doc = instanceSources().find(it->str()); doc != instanceSources().end())
        out[doc->first] = doc->second;
  return out;
}

}  // namespace

nlohmann::json toJson(const Instance& i) {
  const auto& f = i.family;
  const auto* s = i.size ? &*i.size : nullptr;
  nlohmann::json gpus = nullptr;
  if (s && s->gpus) gpus = *s->gpus;
  if (s && !s->gpuShare.empty()) gpus = *shareOf(s->gpuShare);
  nlohmann::json rdma = nullptr;
  if (!f.rdmaKind.empty()) rdma = {{"kind", f.rdmaKind}, {"gbps", orNull(f.rdmaGbps)}};
  return {{"name", i.name},
          {"family", f.family},
          {"kind", f.kind},
          {"type", s ? nlohmann::json(typeName(f, s->key)) : nlohmann::json(nullptr)},
          {"size", orNull(i.sizeKey)},
          {"gpu", orNull(f.gpu)},
          {"gpu_memory_gb", s && s->gpuMemoryGb ? nlohmann::json(*s->gpuMemoryGb) : orNull(f.gpuMemoryGb)},
          {"gpus", gpus},
          {"gpu_share", s ? orNull(s->gpuShare) : nlohmann::json(nullptr)},
          {"vcpus", s ? nlohmann::json(s->vcpus) : nlohmann::json(nullptr)},
          {"memory_gib", s ? nlohmann::json(s->memoryGib) : nlohmann::json(nullptr)},
          {"bare_metal", f.bareMetal},
          {"intra_link", orNull(f.linkClass())},
          {"link", orNull(f.intraLink)},
          {"erdma", orNull(f.erdma)},
          {"erdma_gbps", orNull(f.erdmaGbps)},
          {"rdma", rdma},
          {"network_gbps", s ? orNull(s->networkGbps) : nlohmann::json(nullptr)},
          {"sources", f.sources},
          {"source_documents", sourceDocuments(f)},
          {"notes", orNull(f.notes)}};
}

std::string describe(const Instance& i) {
  const auto& f = i.family;
  if (f.kind == "unpublished") return fmt::format("{}: known only by name, no published figures", f.family);
  const std::string gpu = f.gpu.empty() ? "an unnamed GPU" : f.gpu;
  std::string out = i.size ? typeName(f, i.size->key).substr(4) : f.family;
  out += ": ";
  if (i.size && !i.size->gpuShare.empty())
    out += fmt::format("{} of an {} ({} GB)", i.size->gpuShare, gpu, i.size->gpuMemoryGb.value_or(0));
  else if (i.size && i.size->gpus)
    out += fmt::format("{} x {}", *i.size->gpus, gpu);
  else if (i.size)
    out += fmt::format("a slice of {}", gpu);
  else
    out += gpu;
  if (f.gpuMemoryGb && !(i.size && !i.size->gpuShare.empty())) out += fmt::format(" {} GB", *f.gpuMemoryGb);
  const std::string link = f.linkClass();
  if (link == "nvlink") out += ", NVLink";
  if (link == "nvswitch") out += ", NVSwitch";
  if (link == "pcie") out += ", PCIe";
  if (f.bareMetal) out += ", bare metal";
  if (i.size) out += fmt::format(", {} vCPUs, {:g} GiB", i.size->vcpus, i.size->memoryGib);
  if (i.size && i.size->networkGbps) out += fmt::format(", {:g} Gbit/s", *i.size->networkGbps);
  if (f.erdma.value_or(false))
    out += f.erdmaGbps ? fmt::format(", eRDMA (up to {:g} Gbit/s)", *f.erdmaGbps) : std::string(", eRDMA");
  if (!f.rdmaKind.empty()) out += fmt::format(", SCC RoCE {:g} Gbit/s", f.rdmaGbps.value_or(0));
  return out;
}

}  // namespace ddp::profiler
