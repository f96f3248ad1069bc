// The NCCL log parser on arbitrary bytes: every line through the facts builder, then (for inputs
// whose first byte is a multiple of 4, a quarter of them: rendering costs 4x the parsing) the
// facts as JSON and as the summary, and the same lines read by two builders cut at a line chosen
// by the second byte and merged, which must give the same JSON. Any crash, sanitizer report,
// escaping exception or merge that differs is a bug.
#include "ddp/common/json_text.hpp"
#include "ddp/profiler/nccl/facts.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  ddp::profiler::NcclFactsBuilder builder;
  for (auto line : lines) builder.addLine(line);
  const auto facts = builder.finish();
  if (size < 2 || data[0] % 4 != 0) return 0;
  const auto json = ddp::jsonText(ddp::profiler::toJson(facts));  // as ddprof nccl --json writes it
  (void)ddp::profiler::renderNcclSummary(facts);
  ddp::profiler::NcclFactsBuilder first, second;
  const size_t cut = lines.size() * data[1] / 255;
  for (size_t i = 0; i < lines.size(); ++i) (i < cut ? first : second).addLine(lines[i]);
  first.merge(second);
  if (ddp::jsonText(ddp::profiler::toJson(first.finish())) != json) std::abort();
  return 0;
}
