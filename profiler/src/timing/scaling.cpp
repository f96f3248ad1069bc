// Strong and weak scaling over runs of the same job at different world sizes (docs/profiler.md).
#include "ddp/common/error.hpp"
#include "ddp/profiler/timing/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::profiler {

std::string_view scalingKindName(ScalingKind kind) { return kind == ScalingKind::kWeak ? "weak" : "strong"; }

std::optional<std::string> notTheSameJob(const RunData& a, const RunData& b) {
  if (!a.command.empty() && !b.command.empty()) {
    auto base = [](const std::string& path) { return path.substr(path.rfind('/') + 1); };
    if (base(a.command.front()) != base(b.command.front()))
      return fmt::format("{} runs {}, {} runs {}", a.dir, a.command.front(), b.dir, b.command.front());
  }
  for (const char* option : {"--model", "--data"}) {
    auto x = commandOption(a.command, option), y = commandOption(b.command, option);
    if (x && y && *x != *y)
      return fmt::format("{} runs with {} {}, {} with {} {}", a.dir, option, *x, b.dir, option, *y);
  }
  return std::nullopt;
}

Scaling analyseScaling(const std::vector<RunData>& runs) {
  struct Point {
    const RunData* run;
    TimingAnalysis timing;
    int64_t perRank;
  };
  if (runs.size() < 2) throw ConfigError("scaling needs at least two runs of the same job at different world sizes");
  std::vector<Point> points;
  for (const auto& run : runs) {
    auto timing = analyseTimings(run);
    if (timing.stepsAnalysed == 0) throw ConfigError(fmt::format("{}: no step timings to compare", run.dir));
    int ranks = static_cast<int>(timing.ranks.size());
    points.push_back({&run, timing, timing.globalSamplesPerStep / std::max(1, ranks)});
  }
  std::sort(points.begin(), points.end(),
            [](const Point& x, const Point& y) { return x.timing.ranks.size() < y.timing.ranks.size(); });
  const auto& base = points.front();
  for (const auto& p : points)
    if (auto why = notTheSameJob(*base.run, *p.run)) throw ConfigError("runs are not comparable: " + *why);
  Scaling s;
  bool weak = true, strong = true;
  for (const auto& p : points) {
    weak = weak && p.perRank == base.perRank;
    strong = strong && p.timing.globalSamplesPerStep == base.timing.globalSamplesPerStep;
  }
  if (!weak && !strong) {
    std::string sizes;
    for (const auto& p : points)
      sizes += fmt::format("{}{}: {} per rank, {} global", sizes.empty() ? "" : "; ", p.run->dir, p.perRank,
                           p.timing.globalSamplesPerStep);
    throw ConfigError(
        fmt::format("runs are not comparable: neither the per-rank batch (weak scaling) nor the global "
                    "batch (strong scaling) is the same ({})",
                    sizes));
  }
  s.kind = weak ? ScalingKind::kWeak : ScalingKind::kStrong;
  const double baseRanks = static_cast<double>(base.timing.ranks.size());
  for (const auto& p : points) {
    ScalingPoint q;
    q.dir = p.run->dir;
    q.worldSize = static_cast<int>(p.timing.ranks.size());
    q.stepMs = p.timing.stepMsMedian;
    q.samplesPerSecond = p.timing.samplesPerSecond;
    const double factor = q.worldSize / baseRanks;
    q.idealSamplesPerSecond = base.timing.samplesPerSecond * factor;
    q.idealStepMs = weak ? base.timing.stepMsMedian : base.timing.stepMsMedian / factor;
    q.efficiency = q.idealSamplesPerSecond > 0 ? q.samplesPerSecond / q.idealSamplesPerSecond : 0;
    s.points.push_back(q);
  }
  return s;
}

}  // namespace ddp::profiler
