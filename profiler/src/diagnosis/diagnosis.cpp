// Diagnosis: facts -> findings with evidence, the fix, a confidence and what would confirm it
// (the troubleshooting table of ../shared/gpu-guide.md). The rules (rules_*.cpp) run from a
// table; then a symptom whose cause another finding names is folded into it (the straggler that
// is short of CPU, the communication that is slow because every rank is), and the findings are
// ordered so that the first is the cause to fix first.
#include "ddp/common/enum_names.hpp"
#include "diagnosis/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace ddp::profiler {
namespace {

using rules::Findings;

struct Rule {
  void (*apply)(const RunData&, const TimingAnalysis&, Findings&);
  bool needsSteps;  // runs only when steps were analysed
};

constexpr std::array<Rule, 21> kRules = {{
    {rules::failedRanks, false},
    {rules::restarts, false},
    {rules::ncclErrors, false},
    {rules::socketFallback, false},
    {rules::p2pDisabled, false},
    {rules::noGdr, false},
    {rules::initSlow, false},
    {rules::missingRanks, false},
    {rules::cpuContention, false},
    {rules::threadsOversubscribed, false},
    {rules::cpuContrast, true},
    {rules::gpuThrottled, false},
    {rules::stalls, true},
    {rules::gpuUtilisation, true},
    {rules::commBound, true},
    {rules::straggler, true},
    {rules::persistentLateRank, true},
    {rules::rotatingLateRanks, true},
    {rules::loadImbalance, true},
    {rules::dataBound, true},
    {rules::smallBatch, true},
}};

// In the order of FindingKind.
constexpr std::array<std::string_view, 25> kKindNames = {"rank_failed",
                                                         "rank_hung",
                                                         "host_lost",
                                                         "ranks_stopped",
                                                         "restart",
                                                         "nccl_error",
                                                         "socket_fallback",
                                                         "p2p_disabled",
                                                         "no_gdr",
                                                         "init_slow",
                                                         "missing_ranks",
                                                         "gpu_idle",
                                                         "gpu_fake_busy",
                                                         "comm_bound",
                                                         "straggler",
                                                         "load_imbalance",
                                                         "data_bound",
                                                         "small_batch",
                                                         "cpu_contention",
                                                         "stalls",
                                                         "gpu_throttled",
                                                         "threads_oversubscribed",
                                                         "dataloader_starved",
                                                         "variable_work",
                                                         "unexplained_loss"};

// Which finding to fix first: failures, then causes, then what causes lead to, then notes.
int priority(FindingKind kind) {
  static const std::array<FindingKind, 25> kOrder = {FindingKind::kHostLost,
                                                     FindingKind::kRankFailed,
                                                     FindingKind::kRankHung,
                                                     FindingKind::kNcclError,
                                                     FindingKind::kMissingRanks,
                                                     FindingKind::kCpuContention,
                                                     FindingKind::kStalls,
                                                     FindingKind::kGpuThrottled,
                                                     FindingKind::kStraggler,
                                                     FindingKind::kVariableWork,
                                                     FindingKind::kDataloaderStarved,
                                                     FindingKind::kDataBound,
                                                     FindingKind::kSocketFallback,
                                                     FindingKind::kP2pDisabled,
                                                     FindingKind::kCommBound,
                                                     FindingKind::kSmallBatch,
                                                     FindingKind::kThreadsOversubscribed,
                                                     FindingKind::kLoadImbalance,
                                                     FindingKind::kGpuIdle,
                                                     FindingKind::kGpuFakeBusy,
                                                     FindingKind::kInitSlow,
                                                     FindingKind::kNoGdr,
                                                     FindingKind::kUnexplainedLoss,
                                                     FindingKind::kRestart,
                                                     FindingKind::kRanksStopped};
  return static_cast<int>(std::find(kOrder.begin(), kOrder.end(), kind) - kOrder.begin());
}

std::set<int> ranksOf(const Findings& findings, FindingKind kind) {
  std::set<int> out;
  for (const auto& f : findings)
    if (f.kind == kind) out.insert(f.ranks.begin(), f.ranks.end());
  return out;
}

// The share of its time the most held-back of the contended ranks lost to waiting for a CPU
// (run queue) or to its cgroup's quota.
double contentionShare(const std::set<int>& contended, const TimingAnalysis& t) {
  double share = 0;
  for (const auto& u : t.utilisation)
    if (contended.count(u.rank))
      share = std::max({share, u.runDelayPctMean.value_or(0) / 100, u.throttledPctMean.value_or(0) / 100});
  return share;
}

// A symptom explained by a cause found beside it goes into that cause's evidence: the straggler
// that is short of CPU, and, when every rank is short of CPU, the batch and imbalance findings,
// and the exposed communication when every rank is on a host with more ranks than CPUs or lost
// at least as much of its time to waiting for a CPU as the transfer takes of the step (the
// transfer needs the CPU too). A transfer that takes more than that stays a finding of its own,
// and comes first (see diagnose).
void foldSymptoms(Findings& findings, const RunData& run, const TimingAnalysis& t) {
  const auto contended = ranksOf(findings, FindingKind::kCpuContention);
  if (contended.empty()) return;
  const bool everyRank = t.ranks.size() > 1 && std::all_of(t.ranks.begin(), t.ranks.end(), [&](const RankTiming& r) {
                           return contended.count(r.rank) > 0;
                         });
  size_t crowded = 0;
  for (const auto& c : rules::crowdedHosts(run, t)) crowded += c.ranks.size();
  const bool explainsComm = crowded == t.ranks.size() || contentionShare(contended, t) >= t.transferShare;
  auto folded = [&](const Finding& f) {
    if (f.kind == FindingKind::kStraggler) return contended.count(f.ranks.front()) > 0;
    return everyRank && (f.kind == FindingKind::kSmallBatch || f.kind == FindingKind::kLoadImbalance ||
                         (f.kind == FindingKind::kCommBound && explainsComm));
  };
  for (const auto& f : findings) {
    if (!folded(f)) continue;
    auto cause = std::find_if(findings.begin(), findings.end(), [&](const Finding& c) {
      return c.kind == FindingKind::kCpuContention &&
             (f.ranks.empty() || std::count(c.ranks.begin(), c.ranks.end(), f.ranks.front()) > 0);
    });
    if (cause != findings.end())
      cause->evidence += fmt::format("; it explains the {} finding ({})", findingKindName(f.kind), f.evidence);
  }
  findings.erase(std::remove_if(findings.begin(), findings.end(), folded), findings.end());
}

// A straggler whose extra time is mostly waiting for its data, beside a data finding: when the
// other ranks wait for their data too (the data finding's share of their steps or more), every
// loader is too slow and the straggler's is the slowest: one data finding. When the others barely
// wait, the data is the straggler's problem alone (its shard, disk or loader): the straggler
// finding, which says so, stays alone.
void foldStragglerAndData(Findings& findings, const TimingAnalysis& t) {
  auto straggler = std::find_if(findings.begin(), findings.end(),
                                [](const Finding& f) { return f.kind == FindingKind::kStraggler && !f.ranks.empty(); });
  auto data = std::find_if(findings.begin(), findings.end(), [](const Finding& f) {
    return f.kind == FindingKind::kDataloaderStarved || f.kind == FindingKind::kDataBound;
  });
  if (straggler == findings.end() || data == findings.end()) return;
  const int rank = straggler->ranks.front();
  // Late for its data: the timing analysis's straggler whose extra time is data, or the rank the
  // accounting charged with waits that its data phase made at least half of.
  bool lateForData = false;
  if (t.straggler && t.straggler->rank == rank) {
    const auto grown = rules::grownPhase(t, rank, t.straggler->extraComputeMs);
    lateForData = grown && grown->phase == Phase::kData;
  } else if (const RankAccount* a = rules::accountOf(t.lost, rank)) {
    lateForData = a->causedPeerWaitMs > 0 && a->causedByPhaseMs[Phase::kData] >= 0.5 * a->causedPeerWaitMs;
  }
  if (!lateForData) return;
  double own = 0, waited = 0;
  std::vector<double> otherShares, otherData;
  for (const auto& r : t.ranks) {
    if (r.rank == rank) {
      own = r.phaseMsMean[Phase::kData];
      continue;
    }
    // Means: a loader whose workers cannot keep up makes a long wait every few steps, which a
    // median leaves out.
    double step = 0;
    for (Phase p : kPhases) step += r.phaseMsMean[p];
    otherShares.push_back(step > 0 ? r.phaseMsMean[Phase::kData] / step : 0);
    otherData.push_back(r.phaseMsMean[Phase::kData]);
    waited = std::max(waited, r.peerWaitMsMedian);
  }
  if (otherShares.empty()) return;
  std::sort(otherShares.begin(), otherShares.end());
  std::sort(otherData.begin(), otherData.end());
  if (otherShares[otherShares.size() / 2] >= rules::kDataFindingShare) {
    data->evidence += fmt::format(
        "; rank {} waits longest for its data ({:.1f} ms a step on average against {:.1f} ms), and the "
        "others wait for it in the allreduce ({:.1f} ms a step)",
        rank, own, otherData[otherData.size() / 2], waited);
    findings.erase(straggler);
  } else {
    findings.erase(data);
  }
}

// Stalls spent waiting for data every K steps with K DataLoader workers, beside a data finding,
// are the loader's cadence, not one rank's stall: workers that cannot keep up each load a whole
// batch while the model eats the ones before, so a batch comes after a long wait every K-th step.
// They go into the data finding's evidence, with the cadence.
void foldStallsIntoData(Findings& findings, const RunData& run, const TimingAnalysis& t) {
  auto stalls =
      std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.kind == FindingKind::kStalls; });
  auto data = std::find_if(findings.begin(), findings.end(), [](const Finding& f) {
    return f.kind == FindingKind::kDataloaderStarved || f.kind == FindingKind::kDataBound;
  });
  if (stalls == findings.end() || data == findings.end()) return;
  std::vector<int64_t> inData;
  for (const auto& s : t.stalls)
    if (s.phase == Phase::kData) inData.push_back(s.step);
  if (2 * inData.size() < t.stalls.size()) return;
  std::map<int64_t, size_t> gaps;
  for (size_t i = 1; i < inData.size(); ++i) ++gaps[inData[i] - inData[i - 1]];
  int workers = 0;
  for (const auto& [rank, source] : run.sources)
    if (const auto* loader = source.busiestLoader()) workers = std::max(workers, loader->numWorkers);
  if (gaps.empty() || workers == 0) return;
  // The loader's cadence only: most gaps between the stalls the workers' count (a rank stopped
  // in its data phase, or a slow read now and then, stays a stall).
  const auto top = std::max_element(gaps.begin(), gaps.end(), [](auto& a, auto& b) { return a.second < b.second; });
  if (top->first != workers || 2 * top->second < inData.size() - 1) return;
  data->evidence += fmt::format(
      "; {} steps stalled waiting for their data, every {} steps: the cadence of {} DataLoader workers that cannot "
      "keep up, each loading a whole batch in turn",
      inData.size(), workers, workers);
  findings.erase(stalls);
}

}  // namespace

std::string_view severityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "?";
}

std::string_view confidenceName(Confidence c) {
  switch (c) {
    case Confidence::kLow:
      return "low";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kHigh:
      return "high";
  }
  return "?";
}

std::string_view findingKindName(FindingKind kind) { return enumName(kKindNames, kind); }

bool isFailure(FindingKind kind) {
  return kind == FindingKind::kHostLost || kind == FindingKind::kRankFailed || kind == FindingKind::kRankHung ||
         kind == FindingKind::kNcclError || kind == FindingKind::kMissingRanks;
}

std::vector<Finding> diagnose(const RunData& run, const TimingAnalysis& t) {
  Findings out;
  for (const auto& rule : kRules)
    if ((!rule.needsSteps || t.stepsAnalysed > 0)) rule.apply(run, t, out);
  foldSymptoms(out, run, t);
  foldStragglerAndData(out, t);
  foldStallsIntoData(out, run, t);
  rules::explainLoss(out, t);
  rules::unexplainedLoss(out, t);
  // Notes after problems, suspicions after what the evidence names; failures first; then the
  // larger share of the run a finding explains first (its fix wins back more), the cause-to-effect
  // order among those the accounting cannot measure or that explain the same.
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    auto key = [](const Finding& f) {
      return std::make_tuple(f.severity == Severity::kInfo, f.confidence == Confidence::kLow, !isFailure(f.kind),
                             -f.lostShare.value_or(0), priority(f.kind));
    };
    return key(a) < key(b);
  });
  return out;
}

}  // namespace ddp::profiler
