#include "ddp/comm/timings.hpp"

#include "ddp/comm/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ddp::comm {
namespace {

constexpr std::array<std::string_view, 6> kOpNames = {"allreduce", "allgather", "broadcast",
                                                       "reduce_scatter", "alltoall", "barrier"};
constexpr std::array<CollectiveOp, 6> kOps = {CollectiveOp::kAllreduce, CollectiveOp::kAllgather,
                                              CollectiveOp::kBroadcast, CollectiveOp::kReduceScatter,
                                              CollectiveOp::kAlltoall, CollectiveOp::kBarrier};

using nlohmann::json;

const json& field(const json& object, const char* key, json::value_t type, const char* what) {
  auto it = object.find(key);
  if (it == object.end()) throw ConfigError(fmt::format("missing field \"{}\"", key));
  bool ok = it->type() == type ||
            (type == json::value_t::number_float && it->is_number()) ||
            (type == json::value_t::number_integer && it->is_number_integer());
  if (!ok) throw ConfigError(fmt::format("field \"{}\" must be {}", key, what));
  return *it;
}

int64_t integerField(const json& object, const char* key, int64_t min) {
  auto value = field(object, key, json::value_t::number_integer, "an integer").get<int64_t>();
  if (value < min) throw ConfigError(fmt::format("field \"{}\" is {}, less than {}", key, value, min));
  return value;
}

double durationField(const json& object, const char* key) {
  double value = field(object, key, json::value_t::number_float, "a number").get<double>();
  if (!(value >= 0)) throw ConfigError(fmt::format("field \"{}\" must be a duration >= 0", key));
  return value;
}

}  // namespace

std::string_view phaseName(Phase phase) {
  switch (phase) {
    case Phase::kData: return "data";
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kCommWait: return "comm_wait";
    case Phase::kOptimizer: return "optimizer";
  }
  return "?";
}

std::string_view collectiveOpName(CollectiveOp op) {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (kOps[i] == op) return kOpNames[i];
  return "?";
}

std::optional<CollectiveOp> parseCollectiveOp(std::string_view name) {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (kOpNames[i] == name) return kOps[i];
  return std::nullopt;
}

std::string formatStepRecord(const StepRecord& record) {
  json phases = json::object();
  for (Phase phase : kPhases) phases[std::string(phaseName(phase))] = record.phaseMs(phase);
  json collectives = json::array();
  for (const auto& c : record.collectives) {
    json entry = {{"op", collectiveOpName(c.op)},
                  {"bytes", c.bytes},
                  {"start_unix_us", c.startUnixUs},
                  {"duration_ms", c.durationMs}};
    if (c.bucket >= 0) entry["bucket"] = c.bucket;
    collectives.push_back(std::move(entry));
  }
  json line = {{"schema", kTimingsSchemaVersion},
               {"rank", record.rank},
               {"step", record.step},
               {"start_unix_us", record.startUnixUs},
               {"samples", record.samples},
               {"step_ms", record.stepMs},
               {"phases_ms", std::move(phases)},
               {"collectives", std::move(collectives)}};
  if (record.worldSize > 0) line["world_size"] = record.worldSize;
  if (record.loss) line["loss"] = *record.loss;
  return line.dump();
}

StepRecord parseStepRecord(std::string_view line) {
  json object;
  try {
    object = json::parse(line);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range (1e999)
    throw ConfigError(fmt::format("not JSON ({})", e.what()));
  }
  if (!object.is_object()) throw ConfigError("not a JSON object");
  auto schema = integerField(object, "schema", 1);
  if (schema != kTimingsSchemaVersion)
    throw ConfigError(fmt::format("schema version {} is not supported (this build reads {})",
                                  schema, kTimingsSchemaVersion));
  StepRecord record;
  record.rank = static_cast<int>(integerField(object, "rank", 0));
  if (object.contains("world_size"))
    record.worldSize = static_cast<int>(integerField(object, "world_size", 1));
  record.step = integerField(object, "step", 0);
  record.startUnixUs = integerField(object, "start_unix_us", 0);
  record.samples = integerField(object, "samples", 0);
  record.stepMs = durationField(object, "step_ms");
  const json& phases = field(object, "phases_ms", json::value_t::object, "an object");
  for (Phase phase : kPhases) {
    std::string key(phaseName(phase));
    // A writer that has no such phase leaves it out: it counts as zero.
    if (phases.contains(key)) record.phaseMs(phase) = durationField(phases, key.c_str());
  }
  if (object.contains("collectives")) {
    const json& list = field(object, "collectives", json::value_t::array, "an array");
    for (const json& entry : list) {
      if (!entry.is_object()) throw ConfigError("an entry of \"collectives\" is not an object");
      CollectiveRecord c;
      auto name = field(entry, "op", json::value_t::string, "a string").get<std::string>();
      auto op = parseCollectiveOp(name);
      if (!op) throw ConfigError(fmt::format("unknown collective op \"{}\"", name));
      c.op = *op;
      c.bytes = static_cast<uint64_t>(integerField(entry, "bytes", 0));
      c.startUnixUs = integerField(entry, "start_unix_us", 0);
      c.durationMs = durationField(entry, "duration_ms");
      if (entry.contains("bucket")) c.bucket = static_cast<int>(integerField(entry, "bucket", 0));
      record.collectives.push_back(c);
    }
  }
  if (object.contains("loss") && !object["loss"].is_null())
    record.loss = field(object, "loss", json::value_t::number_float, "a number").get<double>();
  return record;
}

std::string timingsPath(const std::string& runDir, int rank) {
  return fmt::format("{}/timings/rank-{:05d}.jsonl", runDir, rank);
}

std::string progressPath(const std::string& timingsPath) {
  std::string path = timingsPath;
  if (path.size() > 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0) path.erase(path.size() - 6);
  return path + ".progress";
}

int64_t unixMicros(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

}  // namespace ddp::comm
