#include "ddp/common/util_sample.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/json_fields.hpp"
#include "ddp/common/json_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ddp {

std::string formatUtilSample(const UtilSample& s) {
  nlohmann::json line = {{"rank", s.rank},
                         {"t_unix_us", s.tUnixUs},
                         {"cpu_pct", s.cpuPct},
                         {"rss_mib", s.rssMib},
                         {"processes", s.processes}};
  if (s.gpu) line["gpu"] = *s.gpu;
  if (s.gpuUtilPct) line["gpu_util_pct"] = *s.gpuUtilPct;
  if (s.gpuMemUtilPct) line["gpu_mem_util_pct"] = *s.gpuMemUtilPct;
  if (s.gpuMemUsedMib) line["gpu_mem_used_mib"] = *s.gpuMemUsedMib;
  return jsonText(line);
}

UtilSample parseUtilSample(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) throw ConfigError("not JSON");
  const JsonFields f(j);
  UtilSample s;
  s.rank = static_cast<int>(f.integer("rank", 0));
  s.tUnixUs = f.integer("t_unix_us", 0);
  s.cpuPct = f.number("cpu_pct");
  s.rssMib = f.optionalNumber("rss_mib").value_or(0);
  s.processes = static_cast<int>(f.optionalInteger("processes", 0).value_or(0));
  if (auto gpu = f.optionalInteger("gpu", 0)) s.gpu = static_cast<unsigned>(*gpu);
  s.gpuUtilPct = f.optionalNumber("gpu_util_pct");
  s.gpuMemUtilPct = f.optionalNumber("gpu_mem_util_pct");
  s.gpuMemUsedMib = f.optionalNumber("gpu_mem_used_mib");
  return s;
}

}  // namespace ddp
