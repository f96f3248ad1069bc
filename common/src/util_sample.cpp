#include "ddp/common/util_sample.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/json_fields.hpp"
#include "ddp/common/json_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace ddp {
namespace {

using nlohmann::json;

template <typename T>
void put(json& line, const char* key, const std::optional<T>& value) {
  if (value) line[key] = *value;
}

void readScheduling(const JsonFields& f, UtilSample& s) {
  s.runDelayPct = f.optionalNumber("run_delay_pct");
  s.busiestDelayPct = f.optionalNumber("busiest_delay_pct");
  s.throttledPct = f.optionalNumber("throttled_pct");
  s.cpuQuota = f.optionalNumber("cpu_quota");
  s.preemptedPerS = f.optionalNumber("preempted_per_s");
  if (auto n = f.optionalInteger("busy_threads", 0)) s.busyThreads = static_cast<int>(*n);
  s.cpus = f.optionalString("cpus");
  if (s.cpus) parseCpuList(*s.cpus);  // checked
  s.stopped = f.boolean("stopped", false);
  if (auto n = f.optionalInteger("helpers", 0)) s.helpers = static_cast<int>(*n);
  s.helpersCpuPct = f.optionalNumber("helpers_cpu_pct");
  if (auto n = f.optionalInteger("helpers_in_io", 0)) s.helpersInIo = static_cast<int>(*n);
  s.helpersDelayPct = f.optionalNumber("helpers_delay_pct");
  if (auto n = f.optionalInteger("host_cpus", 1)) s.hostCpus = static_cast<int>(*n);
  s.hostBusyPct = f.optionalNumber("host_busy_pct");
  s.stealPct = f.optionalNumber("steal_pct");
  s.load1 = f.optionalNumber("load1");
  if (auto n = f.optionalInteger("runnable", 0)) s.runnable = static_cast<int>(*n);
  s.cpuPressurePct = f.optionalNumber("cpu_pressure_pct");
  if (f.has("others"))
    for (const auto& entry : f.array("others")) {
      const JsonFields o(entry);
      s.others.push_back({static_cast<int>(o.integer("pid", 0)), o.string("name"), o.number("cpu_pct"),
                          o.optionalString("cpus").value_or("")});
    }
  if (f.has("links"))
    for (const auto& entry : f.array("links")) {
      const JsonFields l(entry);
      s.links.push_back({l.string("from"), l.string("to"), l.number("sent_mib"), l.number("sending_ms")});
      if (s.links.back().sentMib < 0 || s.links.back().sendingMs < 0)
        throw ConfigError("links: sent_mib and sending_ms cannot be negative");
    }
}

void readGpu(const JsonFields& f, UtilSample& s) {
  if (auto gpu = f.optionalInteger("gpu", 0)) s.gpu = static_cast<unsigned>(*gpu);
  s.gpuUtilPct = f.optionalNumber("gpu_util_pct");
  s.gpuMemUtilPct = f.optionalNumber("gpu_mem_util_pct");
  s.gpuMemUsedMib = f.optionalNumber("gpu_mem_used_mib");
  s.gpuSmClockMhz = f.optionalNumber("gpu_sm_clock_mhz");
  s.gpuSmClockMaxMhz = f.optionalNumber("gpu_sm_clock_max_mhz");
  s.gpuPowerW = f.optionalNumber("gpu_power_w");
  s.gpuThrottle = f.strings("gpu_throttle");
}

}  // namespace

std::string formatUtilSample(const UtilSample& s) {
  json line = {{"rank", s.rank},
               {"t_unix_us", s.tUnixUs},
               {"cpu_pct", s.cpuPct},
               {"rss_mib", s.rssMib},
               {"processes", s.processes}};
  put(line, "run_delay_pct", s.runDelayPct);
  put(line, "busiest_delay_pct", s.busiestDelayPct);
  put(line, "throttled_pct", s.throttledPct);
  put(line, "cpu_quota", s.cpuQuota);
  put(line, "preempted_per_s", s.preemptedPerS);
  put(line, "busy_threads", s.busyThreads);
  put(line, "cpus", s.cpus);
  if (s.stopped) line["stopped"] = true;
  put(line, "helpers", s.helpers);
  put(line, "helpers_cpu_pct", s.helpersCpuPct);
  put(line, "helpers_in_io", s.helpersInIo);
  put(line, "helpers_delay_pct", s.helpersDelayPct);
  put(line, "host_cpus", s.hostCpus);
  put(line, "host_busy_pct", s.hostBusyPct);
  put(line, "steal_pct", s.stealPct);
  put(line, "load1", s.load1);
  put(line, "runnable", s.runnable);
  put(line, "cpu_pressure_pct", s.cpuPressurePct);
  if (!s.others.empty()) {
    json others = json::array();
    for (const auto& o : s.others)
      others.push_back({{"pid", o.pid}, {"name", o.name}, {"cpu_pct", o.cpuPct}, {"cpus", o.cpus}});
    line["others"] = std::move(others);
  }
  if (!s.links.empty()) {
    json links = json::array();
    for (const auto& l : s.links)
      links.push_back({{"from", l.from}, {"to", l.to}, {"sent_mib", l.sentMib}, {"sending_ms", l.sendingMs}});
    line["links"] = std::move(links);
  }
  put(line, "gpu", s.gpu);
  put(line, "gpu_util_pct", s.gpuUtilPct);
  put(line, "gpu_mem_util_pct", s.gpuMemUtilPct);
  put(line, "gpu_mem_used_mib", s.gpuMemUsedMib);
  put(line, "gpu_sm_clock_mhz", s.gpuSmClockMhz);
  put(line, "gpu_sm_clock_max_mhz", s.gpuSmClockMaxMhz);
  put(line, "gpu_power_w", s.gpuPowerW);
  if (!s.gpuThrottle.empty()) line["gpu_throttle"] = s.gpuThrottle;
  return jsonText(line);
}

UtilSample parseUtilSample(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded()) throw ConfigError("not JSON");
  const JsonFields f(j);
  UtilSample s;
  s.rank = static_cast<int>(f.integer("rank", 0));
  s.tUnixUs = f.integer("t_unix_us", 0);
  s.cpuPct = f.number("cpu_pct");
  s.rssMib = f.optionalNumber("rss_mib").value_or(0);
  s.processes = static_cast<int>(f.optionalInteger("processes", 0).value_or(0));
  readScheduling(f, s);
  readGpu(f, s);
  return s;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::vector<int> sorted(cpus);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (size_t i = 0; i < sorted.size(); ++i) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j > i ? fmt::format("{}-{}", sorted[i], sorted[j]) : std::to_string(sorted[i]));
    i = j;
  }
  return out;
}

std::vector<int> parseCpuList(std::string_view text) {
  auto bad = [&] { return ConfigError(fmt::format("'{}' is not a CPU list (like 0-3,8)", text)); };
  auto number = [&](std::string_view s) {
    int n = -1;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || n < 0 || n > 65535) throw bad();
    return n;
  };
  std::vector<int> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const auto part = text.substr(start, comma - start);
    const size_t dash = part.find('-');
    const int first = number(part.substr(0, dash));
    const int last = dash == std::string_view::npos ? first : number(part.substr(dash + 1));
    if (last < first || last - first > 65535) throw bad();
    for (int c = first; c <= last; ++c) out.push_back(c);
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace ddp
