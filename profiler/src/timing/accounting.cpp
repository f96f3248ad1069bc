// Lost-time accounting (docs/diagnosis.md, "Where the time went"). Per analysed step and rank:
//   step = compute + cpu_wait + data + transfer + peer_wait, where
//   transfer  = the least comm_wait of the step over the ranks (what even the last to arrive waited),
//   peer_wait = the rest of the rank's comm_wait (waiting for a later rank),
//   cpu_wait  = of its own phases, the time its busiest thread waited on a run queue or for its
//               cgroup's quota (the utilisation sample that covers the step), and
//   compute   = the rest of its forward, backward, optimizer and the untimed rest of the step.
// The ideal step is the ranks' mean compute plus the transfer the link allows for the last bucket
// (the one backward cannot hide); the loss is the measured step (the ranks' mean) minus it.
#include "ddp/profiler/timing/accounting.hpp"

#include "ddp/common/enum_names.hpp"
#include "stats.hpp"
#include "timing/buckets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace ddp::profiler {
namespace {

constexpr std::array<std::string_view, 5> kPartNames = {"compute", "cpu_wait", "data", "transfer", "peer_wait"};
constexpr std::array<std::string_view, 4> kPatternNames = {"none", "persistent", "bursts", "rotating"};

constexpr double kLatePatternMinShare = 0.02;  // peer wait below this share of the run: no pattern
constexpr double kBurstStepShare = 0.1;        // the tenth of steps with most peer wait ...
constexpr double kBurstWaitShare = 0.5;        // ... holding this share of it: bursts
constexpr double kPersistentShare = 0.6;       // one rank causing this share of the peer wait ...
constexpr double kPersistentSteps = 0.6;       // ... late in this share of the steps: persistent

using Records = StepRecords;

// The share of its time a rank's busiest thread waited for a CPU (run queue, quota) in the
// utilisation sample whose interval holds the step's midpoint; 0 without samples.
double cpuWaitShare(const std::vector<UtilSample>* samples, int64_t midUs) {
  if (!samples || samples->empty()) return 0;
  auto it = std::lower_bound(samples->begin(), samples->end(), midUs,
                             [](const UtilSample& s, int64_t t) { return s.tUnixUs < t; });
  if (it == samples->end()) --it;
  // The busiest thread's wait where the sampler took it (a helper thread that waits while the loop
  // computes does not hold the loop up), else the longest-waiting thread's.
  const double pct =
      std::max(it->busiestDelayPct ? *it->busiestDelayPct : it->runDelayPct.value_or(0), it->throttledPct.value_or(0));
  return std::clamp(pct / 100, 0.0, 1.0);
}

// The gradient buckets of a record in launch order: (bucket, launch µs, bytes).
struct Launch {
  int bucket;
  int64_t startUs;
  uint64_t bytes;
};
std::vector<Launch> launches(const StepRecord& r) {
  std::vector<Launch> out;
  for (const auto& c : r.collectives)
    if (c.op == CollectiveOp::kAllreduce && c.bucket >= 0) out.push_back({c.bucket, c.startUnixUs, c.bytes});
  std::sort(out.begin(), out.end(), [](const Launch& a, const Launch& b) { return a.startUs < b.startUs; });
  return out;
}
// Each rank's gradient buckets of one step, in launch order.
using Launches = std::map<int, std::vector<Launch>>;

// The link's bus bandwidth for the ideal transfer: where one link between hosts is slow, what the
// fastest one delivered (a ring's bus bandwidth is its links' rate: what the network allows without
// the slow one); else ddpbench's, at the size nearest the step's gradients, where the run
// directory has it; else what the run's own buckets reached (the median over steps and buckets of
// bytes x 2(n-1)/n over the bucket's shortest duration over the ranks).
void linkBandwidth(const RunData& run, const std::vector<Records>& steps, const std::optional<SlowLinks>& slow,
                   LostTime& out) {
  const double n = static_cast<double>(run.timings.size());
  if (n < 2) return;
  if (slow) {
    out.linkBusbwGbps = slow->fastest.mbitPerS() / 8e3;
    out.linkSource = fmt::format("the fastest link between hosts, {} → {}", slow->fastest.from, slow->fastest.to);
    return;
  }
  std::vector<double> busbw;
  uint64_t stepBytes = 0;
  for (const auto& ranks : steps) {
    uint64_t bytes = 0;
    for (const auto& [bucket, bm] : detail::bucketTransfers(ranks)) {
      bytes += bm.first;
      if (bm.second > 0) busbw.push_back(detail::allreduceBusbwGbps(bm.first, n, bm.second));
    }
    stepBytes = std::max(stepBytes, bytes);
  }
  const auto best = nearestAllreduceBench(run, stepBytes);
  if (best && stepBytes > 0) {
    out.linkBusbwGbps = best->busbwGbps;
    out.linkSource = fmt::format("ddpbench's {} allreduce of {} bytes", best->backend, best->bytes);
  } else if (!busbw.empty()) {
    out.linkBusbwGbps = detail::median(busbw);
    out.linkSource = "what the run's own buckets reached (median)";
  }
}

// What the link needs for the step's last bucket (the one backward cannot hide), at most the
// step's transfer: without bucket records or a bandwidth, the whole transfer could have been hidden.
double idealTransferMs(const Launches& launched, double transferMs, const LostTime& lost) {
  if (!lost.linkBusbwGbps || launched.size() < 2) return 0;
  uint64_t bytes = 0;
  for (const auto& [rank, l] : launched)
    if (!l.empty()) bytes = std::max(bytes, l.back().bytes);
  return std::min(transferMs, detail::allreduceMs(bytes, static_cast<double>(launched.size()), *lost.linkBusbwGbps));
}

using RankParts = std::map<int, PartArray<double>>;

// The rank that arrived last (`late`: the least comm_wait) made the others wait: their mean wait
// is charged to it, split over the phases of its step that ran longer than the others' mean, and
// the first bucket at which it was behind by half its final lag. In a stalled step the wait is
// the stall's, not split by phase.
void chargeLateRank(const Records& ranks, int late, const RankParts& parts, const Launches& launched,
                    RankAccount& account, double causedMs, bool stalled) {
  ++account.lateSteps;
  account.causedPeerWaitMs += causedMs;
  if (causedMs <= 0 || stalled) return;
  const auto& own = *ranks.at(late);
  const double others = static_cast<double>(ranks.size() - 1);
  PhaseArray<double> excess;
  double cpuExcess = parts.at(late)[StepPart::kCpuWait];
  auto untimed = [](const StepRecord& r) {
    return std::max(0.0, r.stepMs - std::accumulate(r.phasesMs.begin(), r.phasesMs.end(), 0.0));
  };
  double otherExcess = untimed(own);
  for (Phase p : kPhases) excess[p] = p == Phase::kCommWait ? 0 : own.phasesMs[p];
  for (const auto& [rank, r] : ranks) {
    if (rank == late) continue;
    for (Phase p : kPhases)
      if (p != Phase::kCommWait) excess[p] -= r->phasesMs[p] / others;
    cpuExcess -= parts.at(rank)[StepPart::kCpuWait] / others;
    otherExcess -= untimed(*r) / others;
  }
  double positive = std::max(0.0, otherExcess);
  for (Phase p : kPhases) positive += std::max(0.0, excess[p]);
  if (positive <= 0) {
    account.causedByOtherMs += causedMs;
  } else {
    for (Phase p : kPhases) account.causedByPhaseMs[p] += causedMs * std::max(0.0, excess[p]) / positive;
    account.causedByOtherMs += causedMs * std::max(0.0, otherExcess) / positive;
    account.causedByCpuWaitMs += causedMs * std::clamp(cpuExcess / positive, 0.0, 1.0);
  }
  // The first bucket at which the late rank's launch trailed the others' median by half its lag.
  std::map<int, std::vector<double>> othersAt;
  for (const auto& [rank, l] : launched)
    if (rank != late)
      for (const auto& b : l) othersAt[b.bucket].push_back(static_cast<double>(b.startUs));
  std::vector<std::pair<int, double>> lags;
  for (const auto& l : launched.at(late))
    if (othersAt.count(l.bucket))
      lags.emplace_back(l.bucket, static_cast<double>(l.startUs) - detail::median(othersAt[l.bucket]));
  if (lags.empty() || lags.back().second <= 0) return;
  for (const auto& [bucket, lag] : lags)
    if (lag >= 0.5 * lags.back().second) {
      ++account.lateAtBucket[bucket];
      break;
    }
}

std::optional<InputWork> inputWork(const std::vector<Records>& steps) {
  std::vector<double> size, work;
  for (const auto& ranks : steps)
    for (const auto& [rank, r] : ranks) {
      if (!r->inputElems) return std::nullopt;
      size.push_back(static_cast<double>(*r->inputElems));
      work.push_back(r->phasesMs[Phase::kForward] + r->phasesMs[Phase::kBackward]);
    }
  if (size.size() < 3) return std::nullopt;
  const double n = static_cast<double>(size.size());
  const double ms = std::accumulate(size.begin(), size.end(), 0.0) / n;
  const double mw = std::accumulate(work.begin(), work.end(), 0.0) / n;
  double sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < size.size(); ++i) {
    sxx += (size[i] - ms) * (size[i] - ms);
    syy += (work[i] - mw) * (work[i] - mw);
    sxy += (size[i] - ms) * (work[i] - mw);
  }
  InputWork w;
  w.points = size.size();
  w.sizeCv = ms > 0 ? std::sqrt(sxx / n) / ms : 0;
  w.correlation = sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
  return w;
}

void classify(LostTime& lost, const std::vector<double>& causedPerStep) {
  const double peer = lost.lostMs[StepPart::kPeerWait];
  if (peer <= 0) return;
  const auto top = std::max_element(lost.ranks.begin(), lost.ranks.end(), [](const auto& a, const auto& b) {
    return a.causedPeerWaitMs < b.causedPeerWaitMs;
  });
  lost.topLateShare = top->causedPeerWaitMs / peer;
  std::vector<double> sorted = causedPerStep;
  std::sort(sorted.rbegin(), sorted.rend());
  const auto burst = static_cast<size_t>(std::ceil(kBurstStepShare * static_cast<double>(sorted.size())));
  lost.burstShare = std::accumulate(sorted.begin(), sorted.begin() + static_cast<long>(burst), 0.0) / peer;
  if (lost.share(peer) < kLatePatternMinShare) return;
  if (lost.burstShare >= kBurstWaitShare) {
    lost.pattern = LatePattern::kBursts;
  } else if (lost.topLateShare >= kPersistentShare &&
             static_cast<double>(top->lateSteps) >= kPersistentSteps * static_cast<double>(lost.steps)) {
    lost.pattern = LatePattern::kPersistent;
  } else {
    lost.pattern = LatePattern::kRotating;
  }
  if (lost.pattern != LatePattern::kRotating) lost.lateRank = top->rank;
}

}  // namespace

std::string_view stepPartName(StepPart part) { return enumName(kPartNames, part); }
std::string_view latePatternName(LatePattern p) { return enumName(kPatternNames, p); }

double LostTime::lostTotalMs() const {
  double total = 0;
  for (StepPart p : kStepParts) total += lostMs[p];
  return total;
}

LostTime accountLostTime(const RunData& run, const std::vector<StepRecords>& analysed,
                         const std::vector<int64_t>& matrixSteps, const std::set<int64_t>& stalled,
                         const std::optional<SlowLinks>& slow) {
  LostTime lost;
  lost.steps = analysed.size();
  std::map<int, RankAccount*> byRank;
  for (const auto& [rank, records] : run.timings) lost.ranks.emplace_back().rank = rank;
  for (auto& a : lost.ranks) byRank[a.rank] = &a;
  if (analysed.empty()) return lost;
  linkBandwidth(run, analysed, slow, lost);
  std::vector<double> causedPerStep;
  lost.waitMatrix.resize(lost.ranks.size());
  lost.computeMatrix.resize(lost.ranks.size());
  const std::set<int64_t> keep(matrixSteps.begin(), matrixSteps.end());
  for (const auto& ranks : analysed) {
    const double n = static_cast<double>(ranks.size());
    const bool stall = stalled.count(ranks.begin()->second->step) > 0;
    // The last rank to arrive waited least: its wait is the transfer itself.
    int late = ranks.begin()->first;
    for (const auto& [rank, r] : ranks)
      if (r->phasesMs[Phase::kCommWait] < ranks.at(late)->phasesMs[Phase::kCommWait]) late = rank;
    const double transfer = ranks.at(late)->phasesMs[Phase::kCommWait];
    Launches launched;
    for (const auto& [rank, r] : ranks) launched[rank] = launches(*r);
    RankParts parts;
    double meanStep = 0, meanCompute = 0, peerSum = 0;
    for (const auto& [rank, r] : ranks) {
      auto& p = parts[rank];
      const auto util = run.utilisation.find(rank);
      const double cpuShare = cpuWaitShare(util == run.utilisation.end() ? nullptr : &util->second,
                                           r->startUnixUs + static_cast<int64_t>(r->stepMs * 500));
      const double own = std::max(0.0, r->stepMs - r->phasesMs[Phase::kData] - r->phasesMs[Phase::kCommWait]);
      p[StepPart::kCpuWait] = std::min(own, cpuShare * r->stepMs);
      p[StepPart::kCompute] = own - p[StepPart::kCpuWait];
      p[StepPart::kData] = std::min(r->phasesMs[Phase::kData], r->stepMs);
      p[StepPart::kTransfer] = transfer;
      p[StepPart::kPeerWait] = r->phasesMs[Phase::kCommWait] - transfer;
      double sum = 0;
      auto& account = *byRank[rank];
      for (StepPart part : kStepParts) sum += p[part], account.ms[part] += p[part];
      account.stepMs += r->stepMs;
      if (r->stepMs > 0) lost.worstSumError = std::max(lost.worstSumError, std::abs(sum - r->stepMs) / r->stepMs);
      meanStep += r->stepMs / n;
      meanCompute += p[StepPart::kCompute] / n;
      peerSum += p[StepPart::kPeerWait];
      for (StepPart part : {StepPart::kCpuWait, StepPart::kData, StepPart::kPeerWait}) {
        lost.lostMs[part] += p[part] / n;
        if (stall) lost.lostInStallsMs[part] += p[part] / n;
      }
    }
    const double ideal = idealTransferMs(launched, transfer, lost);
    lost.lostMs[StepPart::kTransfer] += transfer - ideal;
    if (stall) lost.lostInStallsMs[StepPart::kTransfer] += transfer - ideal;
    lost.idealTransferMs += ideal;
    lost.idealComputeMs += meanCompute;
    lost.measuredMs += meanStep;
    if (ranks.size() > 1) chargeLateRank(ranks, late, parts, launched, *byRank[late], peerSum / n, stall);
    causedPerStep.push_back(peerSum / n);
    if (keep.count(ranks.begin()->second->step)) {
      size_t i = 0;  // parts and the matrices' rows are both in rank order
      for (const auto& [rank, p] : parts) {
        lost.waitMatrix[i].push_back(p[StepPart::kCpuWait] + p[StepPart::kData] + p[StepPart::kTransfer] +
                                     p[StepPart::kPeerWait]);
        lost.computeMatrix[i++].push_back(p[StepPart::kCompute]);
      }
    }
  }
  lost.idealMs = lost.idealComputeMs + lost.idealTransferMs;
  classify(lost, causedPerStep);
  lost.inputWork = inputWork(analysed);
  return lost;
}

}  // namespace ddp::profiler
