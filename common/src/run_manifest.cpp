#include "ddp/common/run_manifest.hpp"

#include "ddp/common/clock.hpp"
#include "ddp/common/enum_names.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/json_fields.hpp"

#include <fmt/format.h>

namespace ddp {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 5> kStatusNames = {"running", "succeeded", "failed", "hung", "interrupted"};

template <typename T>
json orNull(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

template <typename T>
std::optional<T> optionalAs(const JsonFields& f, const char* key) {
  auto n = f.optionalInteger(key);
  return n ? std::optional<T>(static_cast<T>(*n)) : std::nullopt;
}

json endJson(const RunManifest& m) {
  json hang = nullptr;
  if (m.hang)
    hang = {{"ranks", m.hang->ranks},
            {"detected_unix_us", m.hang->detectedUnixUs},
            {"stacks_done_unix_us", m.hang->stacksDoneUnixUs}};
  json ranks = json::array();
  for (const auto& r : m.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"pid", r.pid},
                     {"status", rankStatusName(r.status)},
                     {"exit_code", orNull(r.exitCode)},
                     {"signal", orNull(r.signal)}});
  return {{"end_unix_us", *m.endUnixUs},
          {"end", isoTime(*m.endUnixUs)},
          {"duration_s", static_cast<double>(*m.endUnixUs - m.startUnixUs) / 1e6},
          {"exit_code", orNull(m.exitCode)},
          {"culprit", orNull(m.culprit)},
          {"lost_host", m.lostHost ? json(*m.lostHost) : json(nullptr)},
          {"reason", orNull(m.reason)},
          {"mpirun_exit", orNull(m.mpirunExit)},
          {"hang", hang},
          {"ranks", ranks},
          {"versions", m.versions ? versionsJson(*m.versions) : json(nullptr)}};
}

void readEnd(const JsonFields& f, RunManifest& m) {
  m.endUnixUs = f.optionalInteger("end_unix_us", 0);
  m.exitCode = optionalAs<int>(f, "exit_code");
  m.culprit = optionalAs<int>(f, "culprit");
  m.lostHost = f.optionalString("lost_host");
  m.reason = f.optionalString("reason");
  m.mpirunExit = f.optionalString("mpirun_exit");
  if (f.has("hang")) {
    const JsonFields h(f.object("hang"));
    HangRecord hang;
    for (const auto& r : h.array("ranks")) hang.ranks.push_back(r.get<int>());
    hang.detectedUnixUs = h.integer("detected_unix_us", 0);
    hang.stacksDoneUnixUs = h.integer("stacks_done_unix_us", 0);
    m.hang = hang;
  }
  if (f.has("ranks"))
    for (const auto& entry : f.array("ranks")) {
      const JsonFields r(entry);
      ManifestRank rank;
      rank.rank = static_cast<int>(r.integer("rank", 0));
      rank.host = r.optionalString("host").value_or("");
      rank.pid = r.optionalInteger("pid").value_or(-1);
      const auto status = parseRankStatus(r.string("status"));
      if (!status) throw ConfigError(fmt::format("rank {}: \"status\" is not a rank status", rank.rank));
      rank.status = *status;
      rank.exitCode = optionalAs<int>(r, "exit_code");
      rank.signal = optionalAs<int>(r, "signal");
      m.ranks.push_back(rank);
    }
  if (f.has("versions")) m.versions = versionsFrom(f.object("versions"));
}

void readStart(const JsonFields& f, RunManifest& m) {
  m.ddprunVersion = f.optionalString("ddprun_version").value_or("");
  m.command = f.strings("command");
  m.ddprunArgv = f.strings("ddprun_argv");
  m.mpirunArgv = f.strings("mpirun_argv");
  m.launcher = f.optionalString("launcher").value_or("mpirun");
  m.np = static_cast<int>(f.integer("np", 1));
  if (f.has("hosts"))
    for (const auto& entry : f.array("hosts")) {
      const JsonFields h(entry);
      m.hosts.push_back({h.string("host"), static_cast<int>(h.optionalInteger("slots", 0).value_or(0))});
    }
  m.launchHost = f.optionalString("launch_host").value_or("");
  m.masterAddr = f.optionalString("master_addr").value_or("");
  m.masterPort = static_cast<int>(f.optionalInteger("master_port", 0).value_or(0));
  m.runDir = f.optionalString("run_dir").value_or("");
  m.backend = f.optionalString("backend");
  m.startUnixUs = f.optionalInteger("start_unix_us", 0).value_or(0);
  m.attempt = static_cast<int>(f.optionalInteger("attempt", 0).value_or(0));
  m.maxRestarts = static_cast<int>(f.optionalInteger("max_restarts", 0).value_or(0));
  if (f.has("earlier_attempts"))
    for (const auto& entry : f.array("earlier_attempts")) {
      const JsonFields a(entry);
      m.earlierAttempts.push_back({static_cast<int>(a.integer("attempt", 0)), static_cast<int>(a.integer("exit_code")),
                                   a.optionalString("reason").value_or(""), a.string("files"),
                                   static_cast<int>(a.optionalInteger("np", 1).value_or(0)),
                                   a.optionalString("lost_host")});
    }
  if (f.has("instance")) m.instance = f.object("instance");
  m.rankEnvironment = f.stringMap("rank_environment");
  m.environment = f.stringMap("environment");
}

}  // namespace

json versionsJson(const Versions& v) {
  return {{"ddprun", orNull(v.ddprun)},
          {"openmpi", orNull(v.openmpi)},
          {"libtorch", orNull(v.libtorch)},
          {"libtorch_cuda", orNull(v.libtorchCuda)},
          {"nccl", orNull(v.nccl)}};
}

Versions versionsFrom(const json& j) {
  const JsonFields f(j);
  Versions v;
  v.ddprun = f.optionalString("ddprun");
  v.openmpi = f.optionalString("openmpi");
  v.libtorch = f.optionalString("libtorch");
  v.nccl = f.optionalString("nccl");
  if (f.has("libtorch_cuda")) v.libtorchCuda = f.boolean("libtorch_cuda", false);
  return v;
}

std::string_view runStatusName(RunStatus status) { return enumName(kStatusNames, status); }
std::optional<RunStatus> parseRunStatus(std::string_view name) { return enumFromName<RunStatus>(kStatusNames, name); }

std::optional<std::string> RunManifest::instanceName() const {
  if (instance.is_object() && instance.contains("name") && instance["name"].is_string())
    return instance["name"].get<std::string>();
  return std::nullopt;
}

json toJson(const RunManifest& m) {
  json hosts = json::array();
  for (const auto& h : m.hosts) hosts.push_back({{"host", h.host}, {"slots", h.slots}});
  json earlier = json::array();
  for (const auto& a : m.earlierAttempts)
    earlier.push_back({{"attempt", a.attempt},
                       {"exit_code", a.exitCode},
                       {"reason", a.reason},
                       {"files", a.files},
                       {"np", a.np > 0 ? json(a.np) : json(nullptr)},
                       {"lost_host", orNull(a.lostHost)}});
  json j = {{"schema", kRunManifestSchemaVersion},
            {"ddprun_version", m.ddprunVersion},
            {"command", m.command},
            {"ddprun_argv", m.ddprunArgv},
            {"mpirun_argv", m.mpirunArgv},
            {"launcher", m.launcher},
            {"np", m.np},
            {"hosts", hosts},
            {"launch_host", m.launchHost},
            {"master_addr", m.masterAddr},
            {"master_port", m.masterPort},
            {"run_dir", m.runDir},
            {"backend", orNull(m.backend)},
            {"start_unix_us", m.startUnixUs},
            {"start", isoTime(m.startUnixUs)},
            {"attempt", m.attempt},
            {"max_restarts", m.maxRestarts},
            {"earlier_attempts", earlier},
            {"instance", m.instance.is_object() ? m.instance : json(nullptr)},
            {"rank_environment", m.rankEnvironment},
            {"environment", m.environment},
            {"status", runStatusName(m.status)}};
  if (m.endUnixUs) j.update(endJson(m));
  return j;
}

RunManifest runManifestFromJson(const json& j) {
  const JsonFields f(j);
  const auto schema = f.integer("schema", 1);
  if (schema != kRunManifestSchemaVersion)
    throw ConfigError(
        fmt::format("schema version {} is not supported (this build reads {})", schema, kRunManifestSchemaVersion));
  RunManifest m;
  try {
    readStart(f, m);
    if (auto status = f.optionalString("status")) {
      const auto parsed = parseRunStatus(*status);
      if (!parsed) throw ConfigError(fmt::format("field \"status\" is '{}', not a run status", *status));
      m.status = *parsed;
    }
    readEnd(f, m);
  } catch (const json::exception& e) {  // a wrong type inside a list (hang ranks)
    throw ConfigError(e.what());
  }
  return m;
}

}  // namespace ddp
