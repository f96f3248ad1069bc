#pragma once
// Order statistics for the analyses.

#include <algorithm>
#include <vector>

namespace ddp::profiler::detail {

// The q-quantile (0..1) by linear interpolation; 0 for no values.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
inline double median(const std::vector<double>& v) { return quantile(v, 0.5); }

}  // namespace ddp::profiler::detail
