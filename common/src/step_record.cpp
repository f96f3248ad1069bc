#include "ddp/common/step_record.hpp"

#include "ddp/common/enum_names.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/json_fields.hpp"
#include "ddp/common/json_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ddp {
namespace {

using nlohmann::json;

// In the order of CollectiveOp.
constexpr std::array<std::string_view, 6> kOpNames = {"allreduce",      "broadcast", "allgather",
                                                      "reduce_scatter", "alltoall",  "barrier"};
constexpr std::array<std::string_view, 5> kPhaseNames = {"data", "forward", "backward", "comm_wait", "optimizer"};

CollectiveRecord parseCollective(const json& entry) {
  if (!entry.is_object()) throw ConfigError("an entry of \"collectives\" is not an object");
  const JsonFields f(entry);
  CollectiveRecord c;
  const auto name = f.string("op");
  const auto op = parseCollectiveOp(name);
  if (!op) throw ConfigError(fmt::format("unknown collective op \"{}\"", name));
  c.op = *op;
  c.bytes = static_cast<uint64_t>(f.integer("bytes", 0));
  c.startUnixUs = f.integer("start_unix_us", 0);
  c.durationMs = f.duration("duration_ms");
  if (auto bucket = f.optionalInteger("bucket", 0)) c.bucket = static_cast<int>(*bucket);
  return c;
}

}  // namespace

std::string_view phaseName(Phase phase) { return enumName(kPhaseNames, phase); }
std::optional<Phase> parsePhase(std::string_view name) { return enumFromName<Phase>(kPhaseNames, name); }

std::string_view collectiveOpName(CollectiveOp op) { return enumName(kOpNames, op); }
std::optional<CollectiveOp> parseCollectiveOp(std::string_view name) {
  return enumFromName<CollectiveOp>(kOpNames, name);
}

std::string formatStepRecord(const StepRecord& record) {
  const auto perPhase = [](const PhaseArray<double>& values) {
    json object = json::object();
    for (Phase phase : kPhases) object[std::string(phaseName(phase))] = values[phase];
    return object;
  };
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
               {"phases_ms", perPhase(record.phasesMs)},
               {"collectives", std::move(collectives)}};
  if (record.cpuMs) line["cpu_ms"] = perPhase(*record.cpuMs);
  if (record.worldSize > 0) line["world_size"] = record.worldSize;
  if (record.loss) line["loss"] = *record.loss;
  if (record.inputElems) line["input_elems"] = *record.inputElems;
  return jsonText(line);
}

StepRecord parseStepRecord(std::string_view line) {
  json object;
  try {
    object = json::parse(line);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range (1e999)
    throw ConfigError(fmt::format("not JSON ({})", e.what()));
  }
  const JsonFields f(object);
  const auto schema = f.integer("schema", 1);
  if (schema != kTimingsSchemaVersion)
    throw ConfigError(
        fmt::format("schema version {} is not supported (this build reads {})", schema, kTimingsSchemaVersion));
  StepRecord record;
  record.rank = static_cast<int>(f.integer("rank", 0));
  if (auto world = f.optionalInteger("world_size", 1)) record.worldSize = static_cast<int>(*world);
  record.step = f.integer("step", 0);
  record.startUnixUs = f.integer("start_unix_us", 0);
  record.samples = f.integer("samples", 0);
  record.stepMs = f.duration("step_ms");
  // A writer that has no such phase leaves it out: it counts as zero.
  const auto perPhase = [](const JsonFields& phases, PhaseArray<double>& into) {
    for (Phase phase : kPhases) {
      const std::string key(phaseName(phase));
      if (phases.has(key.c_str())) into[phase] = phases.duration(key.c_str());
    }
  };
  perPhase(JsonFields(f.object("phases_ms")), record.phasesMs);
  if (f.has("cpu_ms")) perPhase(JsonFields(f.object("cpu_ms")), record.cpuMs.emplace());
  if (f.has("collectives"))
    for (const json& entry : f.array("collectives")) record.collectives.push_back(parseCollective(entry));
  record.loss = f.optionalNumber("loss");
  record.inputElems = f.optionalInteger("input_elems", 0);
  return record;
}

std::string formatStepProgress(const StepProgress& progress) {
  return fmt::format("{} {}", progress.step, progress.phase ? phaseName(*progress.phase) : "done");
}

std::optional<StepProgress> parseStepProgress(std::string_view text) {
  const auto end = text.find_last_not_of(" \n\r\t");
  if (end == std::string_view::npos) return std::nullopt;
  text = text.substr(0, end + 1);
  const auto space = text.find(' ');
  if (space == std::string_view::npos || space == 0 || space > 18) return std::nullopt;
  StepProgress p;
  p.step = 0;
  for (char c : text.substr(0, space)) {
    if (c < '0' || c > '9') return std::nullopt;
    p.step = p.step * 10 + (c - '0');
  }
  const auto what = text.substr(space + 1);
  if (what == "done") return p;
  p.phase = parsePhase(what);
  if (!p.phase) return std::nullopt;
  return p;
}

}  // namespace ddp
