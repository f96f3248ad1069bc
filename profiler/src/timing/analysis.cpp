// The timing analysis of a run (docs/profiler.md, "Timing analysis"): the steps every rank
// recorded, the step time and phases, the comm_wait split into the transfer itself and waiting
// for a later peer, the gradient allreduces' bandwidth, stalls, the straggler.
#include "ddp/profiler/timing/analysis.hpp"

#include "stats.hpp"
#include "timing/buckets.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace ddp::profiler {
namespace {

using detail::median;
using detail::quantile;

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

// Per rank and per step, over the analysed steps.
struct StepSums {
  std::map<int, std::vector<double>> stepMs, computeMs, computeCpuMs, commWaitMs, peerWaitMs;
  std::map<int, PhaseArray<std::vector<double>>> phaseMs;
  std::map<int, double> commMs;
  std::map<int, size_t> slowest;  // rank -> steps in which it computed longest
  std::vector<double> wallMs, stepImbalance, busbwGbps;
  std::vector<int> slowestRank;  // per step
  PhaseArray<double> shareSum;
  double exposedSum = 0, commTotal = 0, waitTotal = 0, transferShareSum = 0, peerShareSum = 0;
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

// The step's gradient allreduces as the network saw them: each bucket's transfer is its shortest
// duration over the ranks (the last rank to launch it waited for nobody), and the bus bandwidth
// follows as in nccl-tests (bytes x 2(n-1)/n per second).
std::optional<double> allreduceBusbw(const std::map<int, const StepRecord*>& ranks, uint64_t& bytesPerStep) {
  const auto buckets = detail::bucketTransfers(ranks);
  uint64_t bytes = 0;
  double ms = 0;
  for (const auto& [bucket, bm] : buckets) bytes += bm.first, ms += bm.second;
  bytesPerStep = bytes;
  const double n = static_cast<double>(ranks.size());
  if (ranks.size() < 2 || bytes == 0 || ms <= 0) return std::nullopt;
  return detail::allreduceBusbwGbps(bytes, n, ms);
}

void addStep(const std::map<int, const StepRecord*>& ranks, StepSums& sums, TimingAnalysis& a) {
  // The step's time is the mean of the ranks' step times: each rank's steps add up to the time the
  // run took, so throughput follows; the slowest rank's, a maximum over ranks whose steps jitter
  // out of phase, would overstate it.
  double wall = 0, maxCompute = -1, sumCompute = 0, minWait = 1e300;
  int slowestRank = -1;
  int64_t samples = 0;
  for (const auto& [rank, r] : ranks) {
    wall += r->stepMs / static_cast<double>(ranks.size());
    minWait = std::min(minWait, r->phasesMs[Phase::kCommWait]);
    const double c = compute(*r);
    sumCompute += c;
    if (c > maxCompute) maxCompute = c, slowestRank = rank;
    sums.stepMs[rank].push_back(r->stepMs);
    sums.computeMs[rank].push_back(c);
    if (r->cpuMs)
      sums.computeCpuMs[rank].push_back(std::accumulate(r->cpuMs->begin(), r->cpuMs->end(), 0.0) -
                                        (*r->cpuMs)[Phase::kCommWait]);
    sums.commWaitMs[rank].push_back(r->phasesMs[Phase::kCommWait]);
    for (Phase p : kPhases) sums.phaseMs[rank][p].push_back(r->phasesMs[p]);
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
  for (const auto& [rank, r] : ranks) {
    const double peer = r->phasesMs[Phase::kCommWait] - minWait;
    sums.peerWaitMs[rank].push_back(peer);
    if (wall > 0) sums.peerShareSum += peer / wall;
  }
  if (wall > 0) sums.transferShareSum += minWait / wall;
  if (auto busbw = allreduceBusbw(ranks, a.allreduceBytesPerStep)) sums.busbwGbps.push_back(*busbw);
  sums.wallMs.push_back(wall);
  sums.slowestRank.push_back(slowestRank);
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
  a.transferShare = sums.transferShareSum / static_cast<double>(steps);
  a.peerWaitShare = sums.peerShareSum / records;
  if (!sums.busbwGbps.empty()) a.allreduceBusbwGbps = median(sums.busbwGbps);
  a.commMsMean = sums.commTotal / records;
  if (sums.commTotal > 0) a.overlapFraction = std::clamp(1.0 - sums.waitTotal / sums.commTotal, 0.0, 1.0);
  a.imbalanceStepMedian = median(sums.stepImbalance);
  a.imbalanceStepMax = *std::max_element(sums.stepImbalance.begin(), sums.stepImbalance.end());
  a.runMs = std::accumulate(sums.wallMs.begin(), sums.wallMs.end(), 0.0);
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
    if (sums.computeCpuMs[rank].size() == steps) t.computeCpuMsMedian = median(sums.computeCpuMs[rank]);
    for (Phase p : kPhases) {
      const auto& values = sums.phaseMs[rank][p];
      t.phaseMsMean[p] = std::accumulate(values.begin(), values.end(), 0.0) / n;
      t.phaseMsMedian[p] = median(values);
    }
    t.peerWaitMsMedian = median(sums.peerWaitMs[rank]);
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

// Whether a sample of `rank` saw its process stopped between from and to (µs).
bool seenStopped(const RunData& run, int rank, int64_t from, int64_t to) {
  auto it = run.utilisation.find(rank);
  if (it == run.utilisation.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](const UtilSample& s) { return s.stopped && s.tUnixUs >= from && s.tUnixUs <= to; });
}

// The phase of a rank's step that grew most over its median, communication aside; comm_wait when
// none grew by a tenth of the stall (the rank was held up inside the collective itself).
Phase grownPhaseOf(const StepRecord& r, const RankTiming& t, double stallExcessMs) {
  Phase phase = Phase::kCommWait;
  double grew = 0.1 * stallExcessMs;
  for (Phase p : kPhases) {
    const double excess = r.phasesMs[p] - t.phaseMsMedian[p];
    if (p != Phase::kCommWait && excess > grew) grew = excess, phase = p;
  }
  return phase;
}

// Steps far above the median, each with the rank the others waited for and the phase that grew:
// a rank whose process the sampler saw stopped in the step, else the one that computed longest.
void findStalls(const RunData& run, const std::vector<int64_t>& common, StepsByIndex& bySteps, StepSums& sums,
                TimingAnalysis& a) {
  const double limit = std::max(kStallFactor * a.stepMsMedian, a.stepMsMedian + kStallMinMs);
  std::map<int, RankTiming*> byRank;
  for (auto& t : a.ranks) byRank[t.rank] = &t;
  for (size_t i = 0; i < common.size(); ++i) {
    if (sums.wallMs[i] <= limit) continue;
    Stall s;
    s.step = common[i];
    s.stepMs = sums.wallMs[i];
    s.rank = sums.slowestRank[i];
    for (const auto& [rank, record] : bySteps[s.step])
      if (seenStopped(run, rank, record->startUnixUs, record->startUnixUs + static_cast<int64_t>(s.stepMs * 1e3))) {
        s.rank = rank;
        s.stopped = true;
        break;
      }
    const StepRecord* r = bySteps[s.step][s.rank];
    s.startUnixUs = r->startUnixUs;
    s.phase = grownPhaseOf(*r, *byRank[s.rank], s.stepMs - a.stepMsMedian);
    ++byRank[s.rank]->stalls;
    a.stallExcessMs += s.stepMs - a.stepMsMedian;
    a.stalls.push_back(s);
  }
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

std::optional<Straggler> findStraggler(const TimingAnalysis& a, StepSums& sums) {
  if (a.ranks.size() < 2) return std::nullopt;
  const auto top = std::max_element(a.ranks.begin(), a.ranks.end(),
                                    [](const auto& x, const auto& y) { return x.slowestShare < y.slowestShare; });
  std::vector<double> othersCompute;
  for (const auto& t : a.ranks)
    if (t.rank != top->rank) othersCompute.push_back(t.computeMsMedian);
  const double extra = top->computeMsMedian - median(othersCompute);
  if (top->slowestShare < kStragglerSlowestShare || extra <= kStragglerExtraShare * median(othersCompute) ||
      extra <= kStragglerExtraMinMs)
    return std::nullopt;
  // Per step, how much longer the others waited than it did (the median of the others).
  const auto& own = sums.commWaitMs[top->rank];
  std::vector<double> extraWait;
  for (size_t i = 0; i < own.size(); ++i) {
    std::vector<double> others;
    for (const auto& t : a.ranks)
      if (t.rank != top->rank) others.push_back(sums.commWaitMs[t.rank][i]);
    extraWait.push_back(median(others) - own[i]);
  }
  Straggler s;
  s.rank = top->rank;
  s.slowestShare = top->slowestShare;
  s.extraComputeMs = extra;
  s.othersWaitMs = std::max(0.0, median(extraWait));
  return s;
}

// From the first analysed step's earliest start to the last one's latest end, over the ranks.
TimeWindow windowOf(const std::map<int, const StepRecord*>& first, const std::map<int, const StepRecord*>& last) {
  TimeWindow w{INT64_MAX, INT64_MIN};
  for (const auto& [rank, r] : first) w.fromUs = std::min(w.fromUs, r->startUnixUs);
  for (const auto& [rank, r] : last) w.toUs = std::max(w.toUs, r->startUnixUs + static_cast<int64_t>(r->stepMs * 1e3));
  return w;
}

}  // namespace

TimingAnalysis analyseTimings(const RunData& run) {
  TimingAnalysis a;
  StepsByIndex bySteps;
  const auto common = run.timings.empty() ? std::vector<int64_t>{} : commonSteps(run, a, bySteps);
  a.stepsAnalysed = common.size();
  // Over the analysed steps; over the whole run where there are none.
  std::optional<TimeWindow> window;
  if (!common.empty()) window = windowOf(bySteps[common.front()], bySteps[common.back()]);
  a.utilisation = analyseUtilisation(run, window);
  a.links = analyseLinks(run, a.utilisation);
  if (common.empty()) return a;
  StepSums sums;
  for (int64_t step : common) addStep(bySteps[step], sums, a);
  summariseRun(sums, common.size(), run.timings.size(), a);
  summariseRanks(run, sums, common.size(), a);
  findStalls(run, common, bySteps, sums, a);
  fillMatrix(common, bySteps, a);
  std::set<int64_t> stalled;
  for (const auto& s : a.stalls) stalled.insert(s.step);
  std::vector<StepRecords> analysed;
  for (int64_t step : common) analysed.push_back(bySteps[step]);
  a.slowLinks = slowLinks(a.links, a.transferShare * a.runMs);
  a.lost = accountLostTime(run, analysed, a.matrixSteps, stalled, a.slowLinks);
  a.straggler = findStraggler(a, sums);
  return a;
}

}  // namespace ddp::profiler
