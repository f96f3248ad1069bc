#pragma once
// The diagnosis rules (internal to the profiler): each a function from the run and its timing
// analysis to findings. diagnosis.cpp holds the table that runs them, folds symptoms into their
// causes and orders the result; the thresholds are named constants beside each rule, documented
// in docs/profiler.md and docs/diagnosis.md.

#include "ddp/profiler/diagnosis/findings.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::profiler::rules {

using Findings = std::vector<Finding>;

Finding& add(Findings& out, FindingKind kind, Severity severity, std::vector<int> ranks, std::string evidence,
             std::string fix, Confidence confidence, std::string confirm);

// rules_run.cpp: how the ranks ended, restarts, ranks without timings.
void failedRanks(const RunData& run, const TimingAnalysis& t, Findings& out);
void restarts(const RunData& run, const TimingAnalysis& t, Findings& out);
void missingRanks(const RunData& run, const TimingAnalysis& t, Findings& out);

// rules_nccl.cpp: what the NCCL logs say.
void ncclErrors(const RunData& run, const TimingAnalysis& t, Findings& out);
void socketFallback(const RunData& run, const TimingAnalysis& t, Findings& out);
void p2pDisabled(const RunData& run, const TimingAnalysis& t, Findings& out);
void noGdr(const RunData& run, const TimingAnalysis& t, Findings& out);
void initSlow(const RunData& run, const TimingAnalysis& t, Findings& out);

// rules_resources.cpp: CPUs, stalls and GPUs, from the utilisation samples and the timings.
void cpuContention(const RunData& run, const TimingAnalysis& t, Findings& out);
void threadsOversubscribed(const RunData& run, const TimingAnalysis& t, Findings& out);
void stalls(const RunData& run, const TimingAnalysis& t, Findings& out);
void gpuThrottled(const RunData& run, const TimingAnalysis& t, Findings& out);
void gpuUtilisation(const RunData& run, const TimingAnalysis& t, Findings& out);

// rules_timing.cpp: where the step goes.
void commBound(const RunData& run, const TimingAnalysis& t, Findings& out);
void straggler(const RunData& run, const TimingAnalysis& t, Findings& out);
void loadImbalance(const RunData& run, const TimingAnalysis& t, Findings& out);
void dataBound(const RunData& run, const TimingAnalysis& t, Findings& out);
void smallBatch(const RunData& run, const TimingAnalysis& t, Findings& out);

// rules_loss.cpp: from the lost-time accounting (t.lost); explainLoss sets each finding's
// lostShare, unexplainedLoss adds the loss no finding explains (both after the folds).
void persistentLateRank(const RunData& run, const TimingAnalysis& t, Findings& out);
void rotatingLateRanks(const RunData& run, const TimingAnalysis& t, Findings& out);
void cpuContrast(const RunData& run, const TimingAnalysis& t, Findings& out);
void explainLoss(Findings& findings, const TimingAnalysis& t);
// A rank's part in the accounting; null for a rank without timings.
const RankAccount* accountOf(const LostTime& l, int rank);
void unexplainedLoss(Findings& findings, const TimingAnalysis& t);

// Shared by the rules: the exposed-communication threshold (comm_bound, small_batch) and the
// hosts of the ranks (exit records; one host "" when they do not say).
inline constexpr double kCommBoundShare = 0.25;
// The data share of the step from which data_bound / dataloader_starved fire (the data wait is lost
// time as it stands: the healthy loss), and from which they are sure.
inline constexpr double kDataFindingShare = kHealthyLossShare;
inline constexpr double kDataBoundShare = 0.3;
std::map<std::string, std::vector<int>> ranksByHost(const RunData& run, const TimingAnalysis& t);
// A rank's utilisation summary; null when it was not sampled.
const RankUtilisation* utilisationOf(const TimingAnalysis& t, int rank);
// Whether something outside the rank's own processes took its CPUs at times: a process outside
// the job seen on them, its cgroup's quota, the hypervisor (each seen at all, ≥ 1 % of the time).
// Without, a rank's wait for a CPU is among its own threads.
bool outsideTakesCpu(const TimingAnalysis& t, int rank);
// "stress (pid 777, 99 % CPU on CPU(s) 0), ..." (cpuPrefix before the figure: "up to ").
std::string describeOthers(const std::vector<OtherProcess>& others, std::string_view cpuPrefix = "");

// Hosts with more ranks than the CPUs those ranks may run on, whose ranks wait for them.
struct CrowdedHost {
  std::string host;
  std::vector<int> ranks;
  std::set<int> cpus;
  double runDelayPctLo = 0, runDelayPctHi = 0;
};
std::vector<CrowdedHost> crowdedHosts(const RunData& run, const TimingAnalysis& t);

// The phase (not comm_wait) in which a rank spends most more than the others' median, with both
// medians, when that holds at least half of extraMs (a straggler's extra compute).
struct GrownPhase {
  Phase phase = Phase::kData;
  double ownMs = 0, othersMs = 0;
};
std::optional<GrownPhase> grownPhase(const TimingAnalysis& t, int rank, double extraMs);

}  // namespace ddp::profiler::rules
