#include "ddp/comm/sizes.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace ddp::comm {

uint64_t parseSize(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return ConfigError(
        fmt::format("{} '{}' is not a size: expected a number with an optional "
                    "K, M or G suffix (e.g. 8, 64K, 256M)",
                    what, text));
  };
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) throw bad();
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k") {
    shift = 10;
  } else if (suffix == "M" || suffix == "m") {
    shift = 20;
  } else if (suffix == "G" || suffix == "g") {
    shift = 30;
  } else if (!suffix.empty()) {
    throw bad();
  }
  if (value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    throw ConfigError(fmt::format("{} '{}' is too large", what, text));
  }
  return value << shift;
}

std::string formatSize(uint64_t bytes) {
  constexpr std::pair<unsigned, const char*> kUnits[] = {{30, "G"}, {20, "M"}, {10, "K"}};
  for (const auto& [shift, unit] : kUnits) {
    const uint64_t scale = uint64_t{1} << shift;
    if (bytes >= scale && bytes % scale == 0) return fmt::format("{}{}", bytes / scale, unit);
  }
  return std::to_string(bytes);
}

}  // namespace ddp::comm
