#include "ddp/profiler/analysis.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace ddp::profiler {
namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
double median(const std::vector<double>& v) { return quantile(v, 0.5); }

double compute(const StepRecord& r) { return std::max(0.0, r.stepMs - r.phasesMs[Phase::kCommWait]); }
// The time during which at least one of the step's collectives was in flight (queued ones
// overlap, so their durations do not add up).
double collectivesMs(const StepRecord& r) {
  std::vector<std::pair<double, double>> spans;
  for (const auto& c : r.collectives) {
    double start = static_cast<double>(c.startUnixUs) / 1000.0;
    spans.emplace_back(start, start + c.durationMs);
  }
  std::sort(spans.begin(), spans.end());
  double total = 0, end = -1e300;
  for (const auto& [b, e] : spans) {
    if (e <= end) continue;
    total += e - std::max(b, end);
    end = e;
  }
  return total;
}

using StepsByIndex = std::map<int64_t, std::map<int, const StepRecord*>>;

// Sums over the analysed steps, per rank and for the whole run.
struct StepSums {
  std::map<int, std::vector<double>> stepMs, computeMs;
  std::map<int, PhaseArray<double>> phaseMs;
  std::map<int, double> commMs;
  std::map<int, size_t> slowest;  // rank -> steps in which it computed longest
  std::vector<double> wallMs, stepImbalance;
  PhaseArray<double> shareSum;
  double exposedSum = 0, commTotal = 0, waitTotal = 0;
};

// The steps every rank recorded (the first skipped as warm-up when there are more than 3), and
// which ranks are missing or short.
std::vector<int64_t> commonSteps(const RunData& run, TimingAnalysis& a, StepsByIndex& bySteps) {
  for (const auto& [rank, records] : run.timings) {
    a.maxSteps = std::max(a.maxSteps, records.size());
    for (const auto& r : records) bySteps[r.step][rank] = &r;
  }
  for (const auto& [rank, records] : run.timings)
    if (records.size() < a.maxSteps) a.shortRanks.push_back(rank);
  if (run.worldSize)
    for (int r = 0; r < *run.worldSize; ++r)
      if (!run.timings.count(r)) a.missingRanks.push_back(r);
  std::vector<int64_t> common;
  for (const auto& [step, ranks] : bySteps)
    if (ranks.size() == run.timings.size()) common.push_back(step);
  if (common.size() > 3) {
    common.erase(common.begin());  // warm-up: allocations, first-touch, connection set-up
    a.warmupSkipped = true;
  }
  return common;
}

void addStep(const std::map<int, const StepRecord*>& ranks, StepSums& sums, TimingAnalysis& a) {
  double wall = 0, maxCompute = -1, sumCompute = 0;
  int slowestRank = -1;
  int64_t samples = 0;
  for (const auto& [rank, r] : ranks) {
    wall = std::max(wall, r->stepMs);
    const double c = compute(*r);
    sumCompute += c;
    if (c > maxCompute) maxCompute = c, slowestRank = rank;
    sums.stepMs[rank].push_back(r->stepMs);
    sums.computeMs[rank].push_back(c);
    for (Phase p : kPhases) sums.phaseMs[rank][p] += r->phasesMs[p];
    const double comm = collectivesMs(*r);
    sums.commMs[rank] += comm;
    samples += r->samples;
    if (r->stepMs > 0) {
      for (Phase p : kPhases) sums.shareSum[p] += r->phasesMs[p] / r->stepMs;
      sums.exposedSum += r->phasesMs[Phase::kCommWait] / r->stepMs;
    }
    sums.commTotal += comm;
    sums.waitTotal += r->phasesMs[Phase::kCommWait];
  }
  sums.wallMs.push_back(wall);
  a.globalSamplesPerStep = samples;
  const double meanCompute = sumCompute / static_cast<double>(ranks.size());
  sums.stepImbalance.push_back(meanCompute > 0 ? maxCompute / meanCompute : 1);
  ++sums.slowest[slowestRank];
}

void summariseRun(const StepSums& sums, size_t steps, size_t ranks, TimingAnalysis& a) {
  const double records = static_cast<double>(steps) * static_cast<double>(ranks);
  a.stepMsMedian = median(sums.wallMs);
  a.stepMsP95 = quantile(sums.wallMs, 0.95);
  a.samplesPerSecond = a.stepMsMedian > 0 ? static_cast<double>(a.globalSamplesPerStep) * 1000.0 / a.stepMsMedian : 0;
  for (Phase p : kPhases) a.phaseShare[p] = sums.shareSum[p] / records;
  a.exposedCommShare = sums.exposedSum / records;
  a.commMsMean = sums.commTotal / records;
  if (sums.commTotal > 0) a.overlapFraction = std::clamp(1.0 - sums.waitTotal / sums.commTotal, 0.0, 1.0);
  a.imbalanceStepMedian = median(sums.stepImbalance);
  a.imbalanceStepMax = *std::max_element(sums.stepImbalance.begin(), sums.stepImbalance.end());
}

void summariseRanks(const RunData& run, StepSums& sums, size_t steps, TimingAnalysis& a) {
  const double n = static_cast<double>(steps);
  std::vector<double> rankCompute;
  for (const auto& [rank, records] : run.timings) {
    RankTiming t;
    t.rank = rank;
    t.steps = records.size();
    t.stepMsMedian = median(sums.stepMs[rank]);
    t.stepMsP95 = quantile(sums.stepMs[rank], 0.95);
    t.computeMsMedian = median(sums.computeMs[rank]);
    for (Phase p : kPhases) t.phaseMsMean[p] = sums.phaseMs[rank][p] / n;
    t.commMsMean = sums.commMs[rank] / n;
    t.samplesPerStep = records.back().samples;
    t.slowestShare = static_cast<double>(sums.slowest[rank]) / n;
    rankCompute.push_back(t.computeMsMedian);
    a.ranks.push_back(t);
  }
  const double meanCompute =
      std::accumulate(rankCompute.begin(), rankCompute.end(), 0.0) / static_cast<double>(rankCompute.size());
  if (meanCompute > 0) a.imbalanceRun = *std::max_element(rankCompute.begin(), rankCompute.end()) / meanCompute;
}

// Step time per rank for the plots: at most kMaxMatrixSteps steps, evenly spaced.
void fillMatrix(const std::vector<int64_t>& common, StepsByIndex& bySteps, TimingAnalysis& a) {
  const size_t stride = (common.size() + TimingAnalysis::kMaxMatrixSteps - 1) / TimingAnalysis::kMaxMatrixSteps;
  for (size_t j = 0; j < common.size(); j += stride) a.matrixSteps.push_back(common[j]);
  for (const auto& rank : a.ranks) {
    std::vector<double> row;
    for (int64_t step : a.matrixSteps) row.push_back(bySteps[step][rank.rank]->stepMs);
    a.stepMatrix.push_back(std::move(row));
  }
}

// The straggler: one rank that is the slowest in most steps, clearly slower than the rest.
constexpr double kStragglerSlowestShare = 0.6;  // of the steps
constexpr double kStragglerExtraShare = 0.3;    // of the others' median compute
constexpr double kStragglerExtraMinMs = 1.0;

std::optional<Straggler> findStraggler(const TimingAnalysis& a) {
  if (a.ranks.size() < 2) return std::nullopt;
  const auto top = std::max_element(a.ranks.begin(), a.ranks.end(),
                                    [](const auto& x, const auto& y) { return x.slowestShare < y.slowestShare; });
  std::vector<double> othersCompute, othersWait;
  for (const auto& t : a.ranks) {
    if (t.rank == top->rank) continue;
    othersCompute.push_back(t.computeMsMedian);
    othersWait.push_back(t.phaseMsMean[Phase::kCommWait]);
  }
  const double extra = top->computeMsMedian - median(othersCompute);
  if (top->slowestShare < kStragglerSlowestShare || extra <= kStragglerExtraShare * median(othersCompute) ||
      extra <= kStragglerExtraMinMs)
    return std::nullopt;
  Straggler s;
  s.rank = top->rank;
  s.slowestShare = top->slowestShare;
  s.extraComputeMs = extra;
  s.othersWaitMs = std::max(0.0, median(othersWait) - top->phaseMsMean[Phase::kCommWait]);
  return s;
}

}  // namespace

TimingAnalysis analyseTimings(const RunData& run) {
  TimingAnalysis a;
  a.utilisation = analyseUtilisation(run);
  if (run.timings.empty()) return a;
  StepsByIndex bySteps;
  const auto common = commonSteps(run, a, bySteps);
  a.stepsAnalysed = common.size();
  if (common.empty()) return a;
  StepSums sums;
  for (int64_t step : common) addStep(bySteps[step], sums, a);
  summariseRun(sums, common.size(), run.timings.size(), a);
  summariseRanks(run, sums, common.size(), a);
  fillMatrix(common, bySteps, a);
  a.straggler = findStraggler(a);
  return a;
}

std::vector<RankUtilisation> analyseUtilisation(const RunData& run) {
  std::vector<RankUtilisation> out;
  for (const auto& [rank, samples] : run.utilisation) {
    RankUtilisation u;
    u.rank = rank;
    u.samples = samples.size();
    double gpuSum = 0;
    size_t gpuSamples = 0;
    for (const auto& s : samples) {
      u.cpuPctMean += s.cpuPct / static_cast<double>(samples.size());
      u.cpuPctMax = std::max(u.cpuPctMax, s.cpuPct);
      u.rssMibMax = std::max(u.rssMibMax, s.rssMib);
      if (s.gpuUtilPct) {
        gpuSum += *s.gpuUtilPct;
        ++gpuSamples;
      }
      if (s.gpuMemUsedMib) u.gpuMemUsedMibMax = std::max(u.gpuMemUsedMibMax.value_or(0.0), *s.gpuMemUsedMib);
    }
    if (gpuSamples > 0) u.gpuUtilPctMean = gpuSum / static_cast<double>(gpuSamples);
    out.push_back(u);
  }
  return out;
}

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
