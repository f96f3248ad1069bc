// Targets of `ddprof project`: instance names, families and shapes, and the bandwidths of
// their links (docs/projection.md, "Targets").
#include "projection/target.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>

namespace ddp::profiler {
namespace {

using detail::lower;

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t from = 0;
  while (true) {
    const size_t at = text.find(sep, from);
    out.push_back(text.substr(from, at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

int parseCount(const std::string& value, const std::string& key, const std::string& where, int most) {
  static const std::regex digits("^[0-9]{1,7}$");
  if (!std::regex_match(value, digits) || std::stoi(value) < 1 || std::stoi(value) > most)
    throw ConfigError(fmt::format("{}: {}={} is not a count from 1 to {}", where, key, value, most));
  return std::stoi(value);
}

TargetLink parseLink(const std::string& value, const std::string& key, const std::string& where) {
  const auto colon = value.find(':');
  TargetLink link;
  link.kind = lower(value.substr(0, colon));
  const auto& kind = findLinkKind(link.kind, fmt::format("{}: {}", where, key));
  if (kind.interHost != (key == "inter"))
    throw ConfigError(fmt::format("{}: {}={} is a link {} hosts; use {}={}", where, key, value,
                                  kind.interHost ? "between" : "within", kind.interHost ? "inter" : "intra", value));
  if (colon != std::string::npos) {
    link.bytesPerS = parseBandwidth(value.substr(colon + 1), fmt::format("{}: {}={}", where, key, value));
    link.source = "given";
  }
  return link;
}

// bench=FILE: the allreduce of the target's ranks measured on the target (ddpbench's --json
// result or nccl-tests' all_reduce_perf output), at two sizes or more; a link between its hosts
// (within, on one host) without a bandwidth takes its bus bandwidth.
void loadTargetBench(Target& t, const std::string& file, const std::string& where) {
  const std::string what = fmt::format("{}: bench={}", where, file);
  std::vector<std::string> problems;
  t.benchFile = file;
  std::ifstream in(file);
  char first = 0;
  in >> first;  // ddpbench's JSON, else nccl-tests' text
  auto rows = first == '{' ? loadBenchFile(file, problems) : detail::ncclTestsRows(file, problems);
  for (auto& row : rows)
    if (row.op == "allreduce" && row.timeUs > 0) t.bench.push_back(std::move(row));
  if (!problems.empty()) {  // "FILE: what": the file is named already
    const auto& problem = problems.front();
    throw ConfigError(
        fmt::format("{}: {}", what, problem.rfind(file + ": ", 0) == 0 ? problem.substr(file.size() + 2) : problem));
  }
  const int ranks = t.hosts * t.ranksPerHost;
  if (!t.bench.empty() && t.bench.front().nranks != ranks)
    throw ConfigError(
        fmt::format("{}: measured over {} ranks, the target has {}", what, t.bench.front().nranks, ranks));
  const auto fit = fitAllreduceBench(t.bench);
  if (!fit)
    throw ConfigError(
        fmt::format("{}: needs allreduce times at two sizes or more, from a few bytes to megabytes "
                    "(ddpbench --op allreduce -b 8 -e 4M --json FILE, or all_reduce_perf -b 8 -e 4M)",
                    what));
  auto& link = t.hosts > 1 ? t.inter : t.intra;
  if (link && !link->bytesPerS) {
    link->bytesPerS = fit->busGbps * 1e9;
    link->source = fmt::format("the bus bandwidth past its latency measured in {}", file);
    link->measured = true;
  }
}

}  // namespace

namespace detail {

void completeLink(TargetLink& link, const std::string& key, const std::string& device, const std::string& where) {
  if (link.bytesPerS) return;
  if (link.kind == "nvlink" && device.rfind("NVIDIA ", 0) == 0) {
    for (const auto& spec : linkCatalog())
      if (spec.kind == "nvlink" && spec.link == "nvlink-" + lower(device.substr(7))) {
        link.bytesPerS = spec.gbytesPerS * 1e9;
        link.source = spec.source;
        return;
      }
  }
  if ((link.kind == "loopback" || link.kind == "shm") && device == "cpu") return;
  throw ConfigError(fmt::format("{}: {}={} needs a bandwidth, e.g. {}={}:{}", where, key, link.kind, key, link.kind,
                                key == "inter" ? "25gbit" : "31.5GB/s"));
}

}  // namespace detail

double parseBandwidth(const std::string& text, const std::string& what) {
  static const std::regex form(R"(^([0-9]+(\.[0-9]+)?)(kbit|mbit|gbit|kb/s|mb/s|gb/s)$)", std::regex::icase);
  std::smatch m;
  if (std::regex_match(text, m, form)) {
    const double value = std::stod(m[1].str());
    const std::string unit = lower(m[3].str());
    const double scale = unit == "kbit"   ? 1e3 / 8
                         : unit == "mbit" ? 1e6 / 8
                         : unit == "gbit" ? 1e9 / 8
                         : unit == "kb/s" ? 1e3
                         : unit == "mb/s" ? 1e6
                                          : 1e9;
    if (value > 0 && std::isfinite(value)) return value * scale;
  }
  throw ConfigError(fmt::format("{}: '{}' is not a bandwidth (e.g. 25gbit, 100mbit, 150GB/s, 800MB/s)", what, text));
}

namespace {

// The catalog's smallest whole-GPU type with this GPU ("" if none).
std::string wholeGpuType(const std::string& gpu) {
  if (gpu.empty()) return "";
  for (const auto& f : instanceCatalog())
    if (f.kind == "gpu" && f.gpu == gpu)
      for (const auto& s : f.sizes)
        if (s.gpus == 1) return typeName(f, s.key);
  return "";
}

// An instance as a target: whole GPUs of a published family.
void checkTargetInstance(const Instance& instance, const std::string& where) {
  const auto& f = instance.family;
  if (instance.vgpu()) {
    const std::string whole = wholeGpuType(f.gpu);
    throw ConfigError(fmt::format(
        "{}: {} is a vGPU slice ({} of an {}), not a projection target: DDP ranks need "
        "whole GPUs{}",
        where, instance.name, instance.size ? instance.size->gpuShare : "a share",
        f.gpu.empty() ? "unnamed GPU" : f.gpu, whole.empty() ? "" : fmt::format(" (one whole {}: {})", f.gpu, whole)));
  }
  if (f.kind == "unpublished")
    throw ConfigError(
        fmt::format("{}: {} is known only by name (no published GPU, count or links): give the shape, "
                    "e.g. hosts=1,gpus=8,intra=nvlink:300GB/s,gpu=A100",
                    where, f.family));
}

// The link between a target instance's hosts when the target names none: the family's published
// eRDMA or SCC RoCE bandwidth, else sockets over the type's VPC bandwidth; said as such.
std::optional<TargetLink> catalogInter(const Instance& instance) {
  const auto& f = instance.family;
  const double family = f.erdmaGbps.value_or(0);
  const double network = instance.size && instance.size->networkGbps ? *instance.size->networkGbps : 0;
  const std::string type = instance.size ? instance.name : f.family;
  if (!f.rdmaKind.empty() && f.rdmaGbps)
    return TargetLink{"ib", *f.rdmaGbps * 1e9 / 8,
                      fmt::format("the catalog: {}'s SCC RoCE network, {:g} Gbit/s ({}), published, not measured",
                                  f.family, *f.rdmaGbps, f.sources.count("rdma") ? f.sources.at("rdma") : "")};
  if (f.erdma.value_or(false) && (family > 0 || network > 0)) {
    // eRDMA goes over the instance's network: no more than its bandwidth (inference).
    const bool capped = network > 0 && (family <= 0 || network < family);
    const double gbit = capped ? network : family;
    const std::string why = family <= 0 ? "the type's network; no separate eRDMA figure is published"
                            : capped    ? fmt::format("the family's {:g}, capped at the type's network", family)
                                        : "the family's";
    return TargetLink{
        "erdma", gbit * 1e9 / 8,
        fmt::format("the catalog: {}'s eRDMA, {:g} Gbit/s ({}), published, not measured", type, gbit, why)};
  }
  if (network > 0)
    return TargetLink{"socket", network * 1e9 / 8,
                      fmt::format("the catalog: {} has no eRDMA: NCCL over TCP sockets at its {:g} Gbit/s VPC "
                                  "bandwidth, published, not measured",
                                  type, network)};
  return std::nullopt;
}

}  // namespace

Target parseTarget(const std::string& text, int sourceRanks) {
  Target t;
  t.text = text;
  const std::string where = fmt::format("target '{}'", text);
  auto fromInstance = [&](const Instance& instance) {
    checkTargetInstance(instance, where);
    t.instance = instance;
    t.device = deviceName(instance.family);
    t.deviceWhere = fmt::format("the GPU of {} in the catalog{}", instance.family.family,
                                instance.family.gpu.empty() ? " (not named by the vendor)" : "");
  };
  auto catalogIntra = [&] {
    const auto& family = t.instance->family;
    if (family.intraLink.empty())
      throw ConfigError(
          fmt::format("{}: the link between {}'s GPUs is not published: give it, e.g. "
                      "hosts=1,gpus={},instance={},intra=pcie:31.5GB/s",
                      where, family.family, t.ranksPerHost, t.instance->name));
    const auto& link = findLink(family.intraLink);
    return TargetLink{link.kind, link.gbytesPerS * 1e9, link.source};
  };
  if (text.find('=') == std::string::npos) {
    fromInstance(decodeInstance(text));
    t.ranksPerHost = t.instance->gpus().value_or(std::max(1, sourceRanks));
    if (t.ranksPerHost > 1) t.intra = catalogIntra();
    return t;
  }
  static const std::vector<std::string> keys = {"hosts", "gpus", "ranks", "intra", "inter", "gpu", "instance", "bench"};
  std::map<std::string, std::string> fields;
  for (const auto& item : split(text, ',')) {
    const auto eq = item.find('=');
    const std::string key = lower(item.substr(0, eq));
    if (eq == std::string::npos || eq + 1 == item.size())
      throw ConfigError(fmt::format("{}: '{}' is not KEY=VALUE (keys: hosts, gpus, intra, inter, gpu, instance, bench)",
                                    where, item));
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw ConfigError(
          fmt::format("{}: unknown field '{}' (did you mean {}? known: hosts, gpus (or ranks), intra, "
                      "inter, gpu, instance, bench)",
                      where, key, nearestName(key, keys)));
    const std::string name = key == "ranks" ? "gpus" : key;
    if (!fields.emplace(name, item.substr(eq + 1)).second)
      throw ConfigError(fmt::format("{}: {} given twice", where, name));
  }
  if (fields.count("instance")) fromInstance(decodeInstance(fields["instance"]));
  if (fields.count("gpu")) {
    t.device = lower(fields["gpu"]) == "cpu" ? "cpu" : findGpu(fields["gpu"], where).gpu;
    t.deviceWhere = "given";
  }
  if (!fields.count("hosts")) throw ConfigError(fmt::format("{} has no hosts=N (how many hosts)", where));
  t.hosts = parseCount(fields["hosts"], "hosts", where, 100000);
  if (fields.count("gpus"))
    t.ranksPerHost = parseCount(fields["gpus"], "gpus", where, 1024);
  else if (t.instance && t.instance->gpus())
    t.ranksPerHost = *t.instance->gpus();
  else
    throw ConfigError(fmt::format("{} has no gpus=N (ranks per host)", where));
  if (fields.count("intra"))
    t.intra = parseLink(fields["intra"], "intra", where);
  else if (t.ranksPerHost > 1 && t.instance)
    t.intra = catalogIntra();
  else if (t.ranksPerHost > 1)
    throw ConfigError(
        fmt::format("{} has no intra=KIND[:BANDWIDTH] (how a host's ranks talk: nvlink, pcie, shm, loopback)", where));
  if (fields.count("inter"))
    t.inter = parseLink(fields["inter"], "inter", where);
  else if (t.hosts > 1 && t.instance)
    t.inter = catalogInter(*t.instance);
  if (t.hosts > 1 && !t.inter)
    throw ConfigError(fmt::format("{} has no inter=KIND:BANDWIDTH (the link between hosts, e.g. erdma:25gbit)", where));
  if (fields.count("bench")) loadTargetBench(t, fields["bench"], where);
  return t;
}

}  // namespace ddp::profiler
