// Timings lines (docs/timings.md) on arbitrary bytes: either a ConfigError, or a record that
// survives formatStepRecord -> parseStepRecord unchanged. Anything else is a bug.
#include "ddp/common/error.hpp"
#include "ddp/common/step_record.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  ddp::StepRecord record;
  try {
    record = ddp::parseStepRecord(line);
  } catch (const ddp::ConfigError&) {
    return 0;
  }
  const auto again = ddp::parseStepRecord(ddp::formatStepRecord(record));
  if (again.rank != record.rank || again.step != record.step || again.samples != record.samples ||
      again.worldSize != record.worldSize || again.startUnixUs != record.startUnixUs ||
      again.collectives.size() != record.collectives.size() || again.loss.has_value() != record.loss.has_value())
    std::abort();
  return 0;
}
