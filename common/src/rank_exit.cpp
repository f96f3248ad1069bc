#include "ddp/common/rank_exit.hpp"

#include "ddp/common/enum_names.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/json_fields.hpp"

#include <fmt/format.h>

namespace ddp {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 7> kStatusNames = {"ok",      "failed", "culprit", "collateral",
                                                          "stopped", "hung",   "lost"};

json orNull(const std::optional<int>& value) { return value ? json(*value) : json(nullptr); }

}  // namespace

std::string_view rankStatusName(RankStatus status) { return enumName(kStatusNames, status); }
std::optional<RankStatus> parseRankStatus(std::string_view name) {
  return enumFromName<RankStatus>(kStatusNames, name);
}

json toJson(const RankExitRecord& r) {
  json j{{"schema", kRankExitSchemaVersion},
         {"rank", r.rank},
         {"host", r.host},
         {"worker_pid", r.workerPid},
         {"pid", r.programPid},
         {"started", r.started},
         {"exit_code", orNull(r.exitCode)},
         {"signal", orNull(r.signal)},
         {"start_unix_us", r.startUnixUs},
         {"end_unix_us", r.endUnixUs},
         {"duration_s", r.durationSeconds()},
         {"peak_rss_kb", r.peakRssKb},
         {"stop_requested", r.stopRequested},
         {"culprit", r.culprit()}};
  if (r.status) j["status"] = rankStatusName(*r.status);
  return j;
}

RankExitRecord rankExitFromJson(const json& j) {
  const JsonFields f(j);
  if (auto schema = f.optionalInteger("schema"); schema && *schema != kRankExitSchemaVersion)
    throw ConfigError(
        fmt::format("schema version {} is not supported (this build reads {})", *schema, kRankExitSchemaVersion));
  RankExitRecord r;
  r.rank = static_cast<int>(f.integer("rank", 0));
  r.host = f.optionalString("host").value_or("");
  r.workerPid = f.optionalInteger("worker_pid").value_or(-1);
  r.programPid = f.optionalInteger("pid").value_or(-1);
  r.started = f.boolean("started", false);
  if (auto code = f.optionalInteger("exit_code")) r.exitCode = static_cast<int>(*code);
  if (auto sig = f.optionalInteger("signal", 1)) r.signal = static_cast<int>(*sig);
  r.startUnixUs = f.optionalInteger("start_unix_us", 0).value_or(0);
  r.endUnixUs = f.optionalInteger("end_unix_us", 0).value_or(0);
  r.peakRssKb = static_cast<long>(f.optionalInteger("peak_rss_kb", 0).value_or(0));
  r.stopRequested = f.boolean("stop_requested", false);
  if (auto name = f.optionalString("status")) {
    r.status = parseRankStatus(*name);
    if (!r.status) throw ConfigError(fmt::format("field \"status\" is '{}', not a rank status", *name));
  } else if (f.boolean("culprit", false)) {
    r.status = RankStatus::kCulprit;  // a writer that gives only the flag
  }
  return r;
}

}  // namespace ddp
