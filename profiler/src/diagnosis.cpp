// Diagnosis rules: facts -> findings with evidence and the fix (the troubleshooting table of
// ../shared/gpu-guide.md). Each rule is a function in the table at the end; its thresholds are
// named constants, documented in docs/profiler.md.
#include "ddp/profiler/analysis.hpp"

#include "ddp/common/enum_names.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace ddp::profiler {
namespace {

// Thresholds (docs/profiler.md, "Findings").
constexpr double kCommBoundShare = 0.25;  // exposed comm_wait share of the step: comm_bound
constexpr double kCommBoundCritical = 0.5;
constexpr double kDataBoundShare = 0.3;  // data share of the step: data_bound
constexpr double kDataBoundCritical = 0.5;
constexpr double kImbalanceRatio = 1.15;      // slowest/mean compute over the run: load_imbalance
constexpr double kSmallBatchCommRatio = 0.5;  // communication / (forward + backward): small_batch
constexpr double kGpuIdleUtilPct = 50;        // GPU-Util below this ...
constexpr double kGpuIdleWaitShare = 0.3;     // ... while the rank waits (data + comm) this much: gpu_idle
constexpr double kFakeBusyUtilPct = 90;       // GPU-Util above this ...
constexpr double kFakeBusyWaitShare = 0.3;    // ... while the rank waits in comm this much: gpu_fake_busy
constexpr double kInitSlowSeconds = 10;       // NCCL init: init_slow
constexpr int kSigKill = 9;

using Findings = std::vector<Finding>;

void add(Findings& out, FindingKind kind, Severity severity, std::vector<int> ranks, std::string evidence,
         std::string fix) {
  out.push_back({kind, severity, std::move(ranks), std::move(evidence), std::move(fix)});
}

// Ranks that failed on their own: the launcher's culprit first; the ranks it stopped after
// that are collateral, named in one finding.
void failedRanks(const RunData& run, const TimingAnalysis&, Findings& out) {
  std::vector<int> collateral;
  for (const auto& e : run.exits) {
    if (!e.failed()) continue;
    if (e.stopRequested && !e.culprit()) {
      collateral.push_back(e.rank);
      continue;
    }
    add(out, FindingKind::kRankFailed, Severity::kCritical, {e.rank},
        fmt::format("rank {}{} {}{}", e.rank, e.host.empty() ? "" : " on " + e.host,
                    e.signal ? fmt::format("was killed by signal {}", *e.signal)
                             : fmt::format("exited with code {}", *e.exitCode),
                    e.culprit() ? " (the first failure)" : ""),
        e.signal == kSigKill
            ? "SIGKILL is often the kernel's OOM killer: check dmesg, lower the batch or memory use"
            : fmt::format("read this rank's log ({}) for the error; other ranks failing after it are collateral",
                          RunLayout(run.dir).rankLog(e.rank)));
  }
  if (!collateral.empty())
    add(out, FindingKind::kRanksStopped, Severity::kInfo, collateral,
        fmt::format("{} rank(s) were stopped by the launcher after another rank failed or the job was interrupted; "
                    "they are not at fault",
                    collateral.size()),
        "look at the rank_failed finding (the first failure); these ranks only followed it");
}

// A restarted job: what each restart cost (steps redone since the last checkpoint).
void restarts(const RunData& run, const TimingAnalysis&, Findings& out) {
  for (size_t i = 0; i + 1 < run.attempts.size(); ++i) {
    const auto& before = run.attempts[i];
    const auto& after = run.attempts[i + 1];
    const std::string where = RunLayout(run.dir).attempt(before.attempt).ranksDir();
    if (!before.lastStep) {
      add(out, FindingKind::kRestart, Severity::kInfo, {},
          fmt::format("attempt {} failed before its first step; attempt {} started over", before.attempt,
                      after.attempt),
          "see " + where + " for why it failed");
      continue;
    }
    const int64_t resumed = after.firstStep.value_or(0);
    const int64_t redone = std::max<int64_t>(0, *before.lastStep - resumed + 1);
    const int64_t stepsBefore = *before.lastStep - before.firstStep.value_or(0) + 1;
    const double secondsPerStep = stepsBefore > 0 ? before.stepSeconds / static_cast<double>(stepsBefore) : 0;
    add(out, FindingKind::kRestart, redone > 0 ? Severity::kWarning : Severity::kInfo, {},
        fmt::format(
            "attempt {} failed after step {}; attempt {} {}: {} step(s) ({} samples, about {:.2f} s of training) "
            "were lost and done again",
            before.attempt, *before.lastStep, after.attempt,
            !after.firstStep ? "wrote no timings"
            : resumed == 0   ? "started from step 0 (no checkpoint)"
                             : fmt::format("resumed from the checkpoint at step {}", resumed),
            redone, redone * before.samplesPerStep, static_cast<double>(redone) * secondsPerStep),
        redone > 0
            ? fmt::format("checkpoint more often (train --checkpoint-every N) so that a restart redoes less; find "
                          "why attempt {} failed in {}",
                          before.attempt, where)
            : fmt::format("nothing was lost; find why attempt {} failed in {}", before.attempt, where));
  }
}

void ncclErrors(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl) return;
  const auto& n = *run.nccl;
  if (n.failureKinds.empty() && !n.hasWarn()) return;
  if (n.failureKinds == std::set<FailureKind>{FailureKind::kNoIbDevice} && !n.hasWarn()) return;  // socket_fallback's
  std::string kinds;
  for (auto k : n.failureKinds) kinds += (kinds.empty() ? "" : ", ") + std::string(failureKindName(k));
  add(out, FindingKind::kNcclError, Severity::kCritical, {},
      fmt::format("{} NCCL WARN line(s){}{}", n.warnLines, kinds.empty() ? "" : " (" + kinds + ")",
                  n.warnings.empty() ? "" : fmt::format("; first: {}", n.warnings.front().message)),
      "see `ddprof nccl` for what each failure usually means; a connection error right after one rank died is "
      "collateral");
}

void socketFallback(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl) return;
  const auto& n = *run.nccl;
  const bool multiNode = n.hosts.size() > 1 || n.nnodes.value_or(1) > 1;
  if (n.network != "Socket" || (!multiNode && n.ibDevices.empty())) return;
  add(out, FindingKind::kSocketFallback, Severity::kWarning, {},
      fmt::format("NCCL uses TCP sockets (network Socket{}){}",
                  multiNode ? fmt::format(", {} hosts", n.hosts.size()) : "",
                  n.failureKinds.count(FailureKind::kNoIbDevice) ? "; NET/IB : No device found" : ""),
      "use RDMA between hosts: an instance with ERI/eRDMA or InfiniBand, the RDMA drivers (libibverbs, rdma-core) "
      "in the image, and NCCL_IB_HCA naming the devices (erdma_0 / mlx5_0); NCCL >= 2.19 for eRDMA");
}

void p2pDisabled(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl) return;
  const auto& n = *run.nccl;
  const auto disable = n.envOverrides.find("NCCL_P2P_DISABLE");
  const auto level = n.envOverrides.find("NCCL_P2P_LEVEL");
  const bool disabled = disable != n.envOverrides.end() && disable->second == "1";
  const bool leveled = level != n.envOverrides.end();
  const bool shmEdges = n.transports.count(TransportClass::kShm) > 0;
  if (!disabled && !leveled && !shmEdges) return;
  add(out, FindingKind::kP2pDisabled, Severity::kWarning, {},
      fmt::format("GPUs on one host talk through host memory{}{}", shmEdges ? " (SHM edges)" : "",
                  disable != n.envOverrides.end() ? " with NCCL_P2P_DISABLE=" + disable->second
                  : leveled                       ? " with NCCL_P2P_LEVEL=" + level->second
                                                  : ""),
      "unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL; for communication-heavy jobs choose an NVLink instance (gn7, gn7e)");
}

void noGdr(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl || run.nccl->gdrdma != false) return;
  add(out, FindingKind::kNoGdr, Severity::kInfo, {}, "network edges without GPUDirect RDMA (no /GDRDMA on NET edges)",
      "load nvidia-peermem (GPUDirect RDMA) and set NCCL_NET_GDR_LEVEL (e.g. SYS on eRDMA instances, where GDR is off "
      "by default)");
}

void initSlow(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl) return;
  double slowest = 0;
  for (const auto& timing : run.nccl->initTimings) slowest = std::max(slowest, timing.totalSeconds);
  if (slowest <= kInitSlowSeconds) return;
  add(out, FindingKind::kInitSlow, Severity::kWarning, {},
      fmt::format("NCCL communicator init took up to {:.1f} s", slowest),
      "check bootstrap networking (NCCL_SOCKET_IFNAME), DNS, and that every rank starts at the same time");
}

void missingRanks(const RunData& run, const TimingAnalysis& t, Findings& out) {
  if (t.missingRanks.empty()) return;
  add(out, FindingKind::kMissingRanks, Severity::kWarning, t.missingRanks,
      fmt::format("{} of {} ranks wrote no timings", t.missingRanks.size(), run.worldSize.value_or(0)),
      "a rank that wrote nothing failed early or ran without DDPRUN_RUN_DIR; check its log");
}

// GPUs idle while their rank waits, and "fake busy" GPUs (../shared/gpu-guide.md): NVML's
// GPU-Util counts any running kernel, and NCCL's kernels run while they wait for the network.
void gpuUtilisation(const RunData&, const TimingAnalysis& t, Findings& out) {
  for (const auto& u : t.utilisation) {
    if (!u.gpuUtilPctMean) continue;
    auto rank = std::find_if(t.ranks.begin(), t.ranks.end(), [&](const RankTiming& r) { return r.rank == u.rank; });
    if (rank == t.ranks.end() || rank->stepMsMedian <= 0) continue;
    const double wait = rank->phaseMsMean[Phase::kCommWait] / rank->stepMsMedian;
    const double data = rank->phaseMsMean[Phase::kData] / rank->stepMsMedian;
    if (*u.gpuUtilPctMean < kGpuIdleUtilPct && wait + data >= kGpuIdleWaitShare)
      add(out, FindingKind::kGpuIdle, Severity::kWarning, {u.rank},
          fmt::format(
              "rank {}'s GPU was busy {:.0f} % of the time on average while the rank spent {} of each step waiting "
              "({} on communication, {} on data)",
              u.rank, *u.gpuUtilPctMean, percent(wait + data, 0), percent(wait, 0), percent(data, 0)),
          data >= wait ? "feed the GPU: more data-loader workers, pinned memory, prefetching, faster storage"
                       : "hide communication: larger batches, gradient bucketing that overlaps backward, NVLink/RDMA");
    else if (*u.gpuUtilPctMean >= kFakeBusyUtilPct && wait >= kFakeBusyWaitShare)
      add(out, FindingKind::kGpuFakeBusy, Severity::kWarning, {u.rank},
          fmt::format(
              "rank {}'s GPU shows {:.0f} % utilisation, yet {} of each step is spent waiting for communication: "
              "NCCL's kernels count as busy while they wait",
              u.rank, *u.gpuUtilPctMean, percent(wait, 0)),
          "do not trust GPU-Util alone; reduce the exposed communication (see comm_bound) or find the rank the others "
          "wait for");
  }
}

void commBound(const RunData&, const TimingAnalysis& t, Findings& out) {
  if (t.exposedCommShare < kCommBoundShare) return;
  add(out, FindingKind::kCommBound, t.exposedCommShare >= kCommBoundCritical ? Severity::kCritical : Severity::kWarning,
      {},
      fmt::format("ranks wait {} of each step for gradient communication they could not overlap{}",
                  percent(t.exposedCommShare, 0),
                  t.overlapFraction
                      ? fmt::format(" ({} of communication hidden behind backward)", percent(*t.overlapFraction, 0))
                      : ""),
      "use DDP (not DataParallel) with NCCL; larger batches per GPU; tune the bucket size (--bucket-mb); an NVLink "
      "instance within a host and ERI/RDMA between hosts");
}

void straggler(const RunData&, const TimingAnalysis& t, Findings& out) {
  if (!t.straggler) return;
  const auto& s = *t.straggler;
  add(out, FindingKind::kStraggler, Severity::kWarning, {s.rank},
      fmt::format("rank {} was the slowest in {} of steps, computing {:.1f} ms longer than the others' median; the "
                  "others waited {:.1f} ms per step for it",
                  s.rank, percent(s.slowestShare, 0), s.extraComputeMs, s.othersWaitMs),
      "check that rank's host and GPU (clocks, thermal throttling, other jobs: nvidia-smi), its data shard and loader, "
      "and CPU binding; every rank waits for the slowest at each allreduce");
}

void loadImbalance(const RunData&, const TimingAnalysis& t, Findings& out) {
  if (t.imbalanceRun < kImbalanceRatio || t.straggler) return;
  add(out, FindingKind::kLoadImbalance, Severity::kWarning, {},
      fmt::format("compute differs between ranks: slowest/mean = {:.2f} over the run (per step median {:.2f})",
                  t.imbalanceRun, t.imbalanceStepMedian),
      "balance the work per rank: equal shard sizes (a distributed sampler), equal sequence lengths per batch, same "
      "hardware");
}

void dataBound(const RunData&, const TimingAnalysis& t, Findings& out) {
  const double data = t.phaseShare[Phase::kData];
  if (data < kDataBoundShare) return;
  add(out, FindingKind::kDataBound, data >= kDataBoundCritical ? Severity::kCritical : Severity::kWarning, {},
      fmt::format("loading data takes {} of each step", percent(data, 0)),
      "more data-loader workers (about the CPU cores), pinned memory and prefetching, faster storage (local NVMe), "
      "efficient shard formats");
}

void smallBatch(const RunData&, const TimingAnalysis& t, Findings& out) {
  double computeMs = 0;
  for (const auto& r : t.ranks) computeMs += r.phaseMsMean[Phase::kForward] + r.phaseMsMean[Phase::kBackward];
  computeMs /= static_cast<double>(std::max<size_t>(1, t.ranks.size()));
  if (t.commMsMean <= 0 || computeMs <= 0 || t.commMsMean < kSmallBatchCommRatio * computeMs ||
      t.exposedCommShare >= kCommBoundShare)
    return;
  add(out, FindingKind::kSmallBatch, Severity::kInfo, {},
      fmt::format("gradient communication ({:.1f} ms per step) is comparable to forward + backward ({:.1f} ms): "
                  "at this batch size synchronisation is a large part of the work",
                  t.commMsMean, computeMs),
      "a larger batch per rank (or gradient accumulation with no_sync) amortises the allreduce over more samples");
}

struct Rule {
  void (*apply)(const RunData&, const TimingAnalysis&, Findings&);
  bool needsSteps;  // runs only when steps were analysed
};

// In the order their findings are listed within a severity.
constexpr std::array<Rule, 14> kRules = {{
    {failedRanks, false},
    {restarts, false},
    {ncclErrors, false},
    {socketFallback, false},
    {p2pDisabled, false},
    {noGdr, false},
    {initSlow, false},
    {missingRanks, false},
    {gpuUtilisation, true},
    {commBound, true},
    {straggler, true},
    {loadImbalance, true},
    {dataBound, true},
    {smallBatch, true},
}};

constexpr std::array<std::string_view, 16> kKindNames = {
    "rank_failed", "ranks_stopped",  "restart",       "nccl_error", "socket_fallback", "p2p_disabled",
    "no_gdr",      "init_slow",      "missing_ranks", "gpu_idle",   "gpu_fake_busy",   "comm_bound",
    "straggler",   "load_imbalance", "data_bound",    "small_batch"};

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

std::string_view findingKindName(FindingKind kind) { return enumName(kKindNames, kind); }

std::vector<Finding> diagnose(const RunData& run, const TimingAnalysis& t) {
  Findings out;
  for (const auto& rule : kRules)
    if ((!rule.needsSteps || t.stepsAnalysed > 0)) rule.apply(run, t, out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return out;
}

}  // namespace ddp::profiler
