// The NCCL log parser on arbitrary bytes: every line through the facts builder, then (for inputs
// whose first byte is a multiple of 4, a quarter of them: rendering costs 4x the parsing) the
// facts as JSON and as the summary. Any crash, sanitizer report or escaping exception is a bug.
#include "ddp/common/json_text.hpp"
#include "ddp/profiler/nccl_facts.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ddp::profiler::NcclFactsBuilder builder;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    builder.addLine(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  const auto facts = builder.finish();
  if (size == 0 || data[0] % 4 != 0) return 0;
  (void)ddp::jsonText(ddp::profiler::toJson(facts));  // as ddprof nccl --json writes it
  (void)ddp::profiler::renderNcclSummary(facts);
  return 0;
}
