#include "ddp/profiler/timing/links.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace ddp::profiler {

std::string formatRate(double mbitPerS) {
  return mbitPerS >= 1000 ? fmt::format("{:.3g} Gbit/s", mbitPerS / 1000) : fmt::format("{:.3g} Mbit/s", mbitPerS);
}

bool measured(const HostLink& l, const std::vector<HostLink>& links) {
  return l.sentMib >= kLinkBulkMib && l.sentMib >= kLinkBulkShare * links.front().sentMib && l.sendingMs > 0;
}

std::optional<SlowLinks> slowLinks(const std::vector<HostLink>& links, double transferMs) {
  std::vector<HostLink> bulk;
  for (const auto& l : links)
    if (measured(l, links)) bulk.push_back(l);
  if (bulk.size() < 2) return std::nullopt;
  SlowLinks s;
  s.fastest = *std::max_element(bulk.begin(), bulk.end(),
                                [](const auto& a, const auto& b) { return a.mbitPerS() < b.mbitPerS(); });
  auto isSlow = [&](const HostLink& l) {
    return l.mbitPerS() <= kSlowLinkRatio * s.fastest.mbitPerS() && l.sendingMs >= kSlowLinkTransferShare * transferMs;
  };
  std::set<std::string> hosts;
  for (const auto& l : bulk) {
    if (isSlow(l)) s.slow.push_back(l);
    hosts.insert({l.from, l.to});
  }
  if (s.slow.empty()) return std::nullopt;
  for (const auto& h : hosts) {
    bool allSlow = true, fastElsewhere = false;
    for (const auto& l : bulk) {
      if (l.from == h || l.to == h)
        allSlow = allSlow && isSlow(l);
      else
        fastElsewhere = fastElsewhere || !isSlow(l);
    }
    if (allSlow && fastElsewhere) s.hosts.push_back(h);
  }
  return s;
}

}  // namespace ddp::profiler
