#include "ddp/common/text.hpp"

#include <fmt/format.h>

namespace ddp {

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + (j > i + 1    ? fmt::format("{}-{}", ranks[i], ranks[j])
                                        : j == i + 1 ? fmt::format("{}, {}", ranks[i], ranks[j])
                                                     : std::to_string(ranks[i]));
    i = j;
  }
  return out;
}

std::string percent(double share, int decimals) { return fmt::format("{:.{}f} %", 100 * share, decimals); }

}  // namespace ddp
