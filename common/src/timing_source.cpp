#include "ddp/common/timing_source.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/json_fields.hpp"

#include <fmt/format.h>

namespace ddp {
namespace {

using nlohmann::json;

template <typename T>
json orNull(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

DataLoaderFacts loaderFromJson(const json& j) {
  const JsonFields f(j);
  DataLoaderFacts d;
  d.numWorkers = static_cast<int>(f.integer("num_workers", 0));
  d.pinMemory = f.boolean("pin_memory", false);
  d.batchSize = f.optionalInteger("batch_size", 0);
  d.persistentWorkers = f.boolean("persistent_workers", false);
  d.prefetchFactor = f.optionalInteger("prefetch_factor", 0);
  d.batches = f.optionalInteger("batches", 0).value_or(0);
  d.waitMs = f.optionalNumber("wait_ms").value_or(0);
  d.datasetSize = f.optionalInteger("dataset_size", 0);
  return d;
}

}  // namespace

const DataLoaderFacts* TimingSource::busiestLoader() const {
  const DataLoaderFacts* best = nullptr;
  for (const auto& d : dataloaders)
    if (d.batches > 0 && (!best || d.batches > best->batches)) best = &d;
  return best;
}

json toJson(const TimingSource& s) {
  json loaders = json::array();
  for (const auto& d : s.dataloaders)
    loaders.push_back({{"num_workers", d.numWorkers},
                       {"pin_memory", d.pinMemory},
                       {"batch_size", orNull(d.batchSize)},
                       {"persistent_workers", d.persistentWorkers},
                       {"prefetch_factor", orNull(d.prefetchFactor)},
                       {"batches", d.batches},
                       {"wait_ms", d.waitMs},
                       {"dataset_size", orNull(d.datasetSize)}});
  return {{"rank", s.rank},
          {"source", s.source},
          {"instrumented", s.instrumented},
          {"reason", s.reason.empty() ? json(nullptr) : json(s.reason)},
          {"runtime", s.runtime},
          {"device", s.device.empty() ? json(nullptr) : json(s.device)},
          {"dataloaders", loaders},
          {"notes", s.notes}};
}

TimingSource timingSourceFromJson(const json& j) {
  const JsonFields f(j);
  TimingSource s;
  s.rank = static_cast<int>(f.integer("rank", 0));
  s.source = f.string("source");
  s.instrumented = f.boolean("instrumented", true);
  s.reason = f.optionalString("reason").value_or("");
  s.runtime = f.optionalString("runtime").value_or("");
  s.device = f.optionalString("device").value_or("");
  if (f.has("dataloaders"))
    for (const auto& entry : f.array("dataloaders")) s.dataloaders.push_back(loaderFromJson(entry));
  s.notes = f.strings("notes");
  return s;
}

}  // namespace ddp
