#include "ddp/profiler/analysis.hpp"

#include "ddp/comm/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace ddp::profiler {
namespace {

using comm::Phase;

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
double median(const std::vector<double>& v) { return quantile(v, 0.5); }

double compute(const comm::StepRecord& r) { return std::max(0.0, r.stepMs - r.phaseMs(Phase::kCommWait)); }
// The time during which at least one of the step's collectives was in flight (queued ones
// overlap, so their durations do not add up).
double collectivesMs(const comm::StepRecord& r) {
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

}  // namespace

TimingAnalysis analyseTimings(const RunData& run) {
  TimingAnalysis a;
  a.utilisation = analyseUtilisation(run);
  if (run.timings.empty()) return a;
  // Steps every rank recorded, by step index.
  std::map<int64_t, std::map<int, const comm::StepRecord*>> bySteps;
  for (const auto& [rank, records] : run.timings) {
    a.maxSteps = std::max(a.maxSteps, records.size());
    for (const auto& r : records) bySteps[r.step][rank] = &r;
  }
  const size_t nRanks = run.timings.size();
  for (const auto& [rank, records] : run.timings)
    if (records.size() < a.maxSteps) a.shortRanks.push_back(rank);
  if (run.worldSize)
    for (int r = 0; r < *run.worldSize; ++r)
      if (!run.timings.count(r)) a.missingRanks.push_back(r);

  std::vector<int64_t> common;
  for (const auto& [step, ranks] : bySteps)
    if (ranks.size() == nRanks) common.push_back(step);
  if (common.size() > 3) {
    common.erase(common.begin());  // warm-up: allocations, first-touch, connection set-up
    a.warmupSkipped = true;
  }
  a.stepsAnalysed = common.size();
  if (common.empty()) return a;

  std::map<int, std::vector<double>> stepMs, computeMs;
  std::map<int, std::array<double, 5>> phaseSum;
  std::map<int, double> commSum;
  std::map<int, size_t> slowest;
  std::vector<double> wallMs, stepImbalance;
  std::array<double, 5> shareSum{};
  double exposedSum = 0, commTotal = 0, waitTotal = 0;
  for (int64_t step : common) {
    const auto& ranks = bySteps[step];
    double wall = 0, maxCompute = -1, sumCompute = 0;
    int slowestRank = -1;
    int64_t samples = 0;
    for (const auto& [rank, r] : ranks) {
      wall = std::max(wall, r->stepMs);
      double c = compute(*r);
      sumCompute += c;
      if (c > maxCompute) maxCompute = c, slowestRank = rank;
      stepMs[rank].push_back(r->stepMs);
      computeMs[rank].push_back(c);
      for (Phase p : comm::kPhases) phaseSum[rank][static_cast<size_t>(p)] += r->phaseMs(p);
      commSum[rank] += collectivesMs(*r);
      samples += r->samples;
      if (r->stepMs > 0) {
        for (Phase p : comm::kPhases) shareSum[static_cast<size_t>(p)] += r->phaseMs(p) / r->stepMs;
        exposedSum += r->phaseMs(Phase::kCommWait) / r->stepMs;
      }
      commTotal += collectivesMs(*r);
      waitTotal += r->phaseMs(Phase::kCommWait);
    }
    wallMs.push_back(wall);
    a.globalSamplesPerStep = samples;
    double meanCompute = sumCompute / static_cast<double>(ranks.size());
    stepImbalance.push_back(meanCompute > 0 ? maxCompute / meanCompute : 1);
    ++slowest[slowestRank];
  }
  const double n = static_cast<double>(common.size());
  const double records = n * static_cast<double>(nRanks);
  a.stepMsMedian = median(wallMs);
  a.stepMsP95 = quantile(wallMs, 0.95);
  a.samplesPerSecond = a.stepMsMedian > 0 ? static_cast<double>(a.globalSamplesPerStep) * 1000.0 / a.stepMsMedian : 0;
  for (size_t p = 0; p < 5; ++p) a.phaseShare[p] = shareSum[p] / records;
  a.exposedCommShare = exposedSum / records;
  a.commMsMean = commTotal / records;
  if (commTotal > 0) a.overlapFraction = std::clamp(1.0 - waitTotal / commTotal, 0.0, 1.0);
  a.imbalanceStepMedian = median(stepImbalance);
  a.imbalanceStepMax = *std::max_element(stepImbalance.begin(), stepImbalance.end());

  std::vector<double> rankCompute;
  for (const auto& [rank, records] : run.timings) {
    RankTiming t;
    t.rank = rank;
    t.steps = records.size();
    t.stepMsMedian = median(stepMs[rank]);
    t.stepMsP95 = quantile(stepMs[rank], 0.95);
    t.computeMsMedian = median(computeMs[rank]);
    for (size_t p = 0; p < 5; ++p) t.phaseMsMean[p] = phaseSum[rank][p] / n;
    t.commMsMean = commSum[rank] / n;
    t.samplesPerStep = records.back().samples;
    t.slowestShare = static_cast<double>(slowest[rank]) / n;
    rankCompute.push_back(t.computeMsMedian);
    a.ranks.push_back(t);
  }
  const size_t stride = (common.size() + TimingAnalysis::kMaxMatrixSteps - 1) / TimingAnalysis::kMaxMatrixSteps;
  for (size_t j = 0; j < common.size(); j += stride) a.matrixSteps.push_back(common[j]);
  for (const auto& rank : a.ranks) {
    std::vector<double> row;
    for (int64_t step : a.matrixSteps) row.push_back(bySteps[step][rank.rank]->stepMs);
    a.stepMatrix.push_back(std::move(row));
  }
  double meanCompute = std::accumulate(rankCompute.begin(), rankCompute.end(), 0.0) / static_cast<double>(rankCompute.size());
  if (meanCompute > 0) a.imbalanceRun = *std::max_element(rankCompute.begin(), rankCompute.end()) / meanCompute;

  // The straggler: one rank that is the slowest in most steps, clearly slower than the rest.
  if (nRanks >= 2) {
    const auto top = std::max_element(a.ranks.begin(), a.ranks.end(),
                                      [](const auto& x, const auto& y) { return x.slowestShare < y.slowestShare; });
    std::vector<double> othersCompute, othersWait;
    for (const auto& t : a.ranks) {
      if (t.rank == top->rank) continue;
      othersCompute.push_back(t.computeMsMedian);
      othersWait.push_back(t.phaseMsMean[static_cast<size_t>(Phase::kCommWait)]);
    }
    const double extra = top->computeMsMedian - median(othersCompute);
    if (top->slowestShare >= 0.6 && extra > 0.3 * median(othersCompute) && extra > 1.0) {
      Straggler s;
      s.rank = top->rank;
      s.slowestShare = top->slowestShare;
      s.extraComputeMs = extra;
      s.othersWaitMs = std::max(0.0, median(othersWait) - top->phaseMsMean[static_cast<size_t>(Phase::kCommWait)]);
      a.straggler = s;
    }
  }
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

std::optional<std::string> notTheSameJob(const RunData& a, const RunData& b) {
  if (!a.command.empty() && !b.command.empty()) {
    auto base = [](const std::string& path) { return path.substr(path.rfind('/') + 1); };
    if (base(a.command.front()) != base(b.command.front()))
      return fmt::format("{} runs {}, {} runs {}", a.dir, a.command.front(), b.dir, b.command.front());
  }
  for (const char* option : {"--model", "--data"}) {
    auto x = commandOption(a.command, option), y = commandOption(b.command, option);
    if (x && y && *x != *y) return fmt::format("{} runs with {} {}, {} with {} {}", a.dir, option, *x, b.dir, option, *y);
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
  std::sort(points.begin(), points.end(), [](const Point& x, const Point& y) { return x.timing.ranks.size() < y.timing.ranks.size(); });
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
    throw ConfigError(fmt::format("runs are not comparable: neither the per-rank batch (weak scaling) nor the global "
                                  "batch (strong scaling) is the same ({})", sizes));
  }
  s.kind = weak ? "weak" : "strong";
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
