// Diagnosis rules: facts -> findings with evidence and the fix (the troubleshooting table of
// ../shared/gpu-guide.md). Thresholds are documented in docs/profiler.md.
#include "ddp/profiler/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::profiler {
namespace {

using comm::Phase;

double share(const TimingAnalysis& t, Phase p) { return t.phaseShare[static_cast<size_t>(p)]; }
std::string pct(double x) { return fmt::format("{:.0f} %", 100 * x); }

}  // namespace

std::string_view severityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "?";
}

std::vector<Finding> diagnose(const RunData& run, const TimingAnalysis& t) {
  std::vector<Finding> out;
  auto add = [&](std::string kind, Severity severity, std::vector<int> ranks, std::string evidence, std::string fix) {
    out.push_back({std::move(kind), severity, std::move(ranks), std::move(evidence), std::move(fix)});
  };

  // Ranks that failed on their own: the launcher's culprit first; the ranks it stopped after
  // that are collateral, named in one finding.
  std::vector<int> collateral;
  for (const auto& e : run.exits) {
    if (!e.failed()) continue;
    if (e.stopped && !e.culprit) {
      collateral.push_back(e.rank);
      continue;
    }
    add("rank_failed", Severity::kCritical, {e.rank},
        fmt::format("rank {}{} {}{}", e.rank, e.host.empty() ? "" : " on " + e.host,
                    e.signal ? fmt::format("was killed by signal {}", *e.signal) : fmt::format("exited with code {}", *e.exitCode),
                    e.culprit ? " (the first failure)" : ""),
        e.signal && *e.signal == 9 ? "SIGKILL is often the kernel's OOM killer: check dmesg, lower the batch or memory use"
                                   : "read this rank's log (ranks/rank-NNNNN.log) for the error; other ranks failing after it are collateral");
  }
  if (!collateral.empty())
    add("ranks_stopped", Severity::kInfo, collateral,
        fmt::format("{} rank(s) were stopped by the launcher after another rank failed or the job was interrupted; "
                    "they are not at fault", collateral.size()),
        "look at the rank_failed finding (the first failure); these ranks only followed it");
  // A restarted job: what each restart cost (steps redone since the last checkpoint).
  for (size_t i = 0; i + 1 < run.attempts.size(); ++i) {
    const auto& before = run.attempts[i];
    const auto& after = run.attempts[i + 1];
    if (!before.lastStep) {
      add("restart", Severity::kInfo, {}, fmt::format("attempt {} failed before its first step; attempt {} started over",
                                                      before.attempt, after.attempt),
          "see attempts/" + std::to_string(before.attempt) + "/ranks for why it failed");
      continue;
    }
    const int64_t resumed = after.firstStep.value_or(0);
    const int64_t redone = std::max<int64_t>(0, *before.lastStep - resumed + 1);
    const int64_t stepsBefore = *before.lastStep - before.firstStep.value_or(0) + 1;
    const double secondsPerStep = stepsBefore > 0 ? before.stepSeconds / static_cast<double>(stepsBefore) : 0;
    add("restart", redone > 0 ? Severity::kWarning : Severity::kInfo, {},
        fmt::format("attempt {} failed after step {}; attempt {} {}: {} step(s) ({} samples, about {:.2f} s of training) "
                    "were lost and done again",
                    before.attempt, *before.lastStep, after.attempt,
                    !after.firstStep ? "wrote no timings" : resumed == 0 ? "started from step 0 (no checkpoint)"
                                                                          : fmt::format("resumed from the checkpoint at step {}", resumed),
                    redone, redone * before.samplesPerStep, static_cast<double>(redone) * secondsPerStep),
        redone > 0 ? "checkpoint more often (train --checkpoint-every N) so that a restart redoes less; find why attempt " +
                         std::to_string(before.attempt) + " failed in attempts/" + std::to_string(before.attempt) + "/ranks"
                   : "nothing was lost; find why attempt " + std::to_string(before.attempt) + " failed in attempts/" +
                         std::to_string(before.attempt) + "/ranks");
  }
  if (run.nccl) {
    const auto& n = *run.nccl;
    if (!n.failureKinds.empty() || n.hasWarn()) {
      std::string kinds;
      for (auto k : n.failureKinds) kinds += (kinds.empty() ? "" : ", ") + std::string(failureKindName(k));
      std::string first = n.warnings.empty() ? "" : fmt::format("; first: {}", n.warnings.front().message);
      bool onlyNoIb = n.failureKinds == std::set<FailureKind>{FailureKind::kNoIbDevice} && !n.hasWarn();
      if (!onlyNoIb)
        add("nccl_error", Severity::kCritical, {},
            fmt::format("{} NCCL WARN line(s){}{}", n.warnLines, kinds.empty() ? "" : " (" + kinds + ")", first),
            "see `ddprof nccl` for what each failure usually means; a connection error right after one rank died is collateral");
    }
    const bool multiNode = n.hosts.size() > 1 || n.nnodes.value_or(1) > 1;
    if (n.network == "Socket" && (multiNode || !n.ibDevices.empty()))
      add("socket_fallback", Severity::kWarning, {},
          fmt::format("NCCL uses TCP sockets (network Socket{}){}", multiNode ? fmt::format(", {} hosts", n.hosts.size()) : "",
                      n.failureKinds.count(FailureKind::kNoIbDevice) ? "; NET/IB : No device found" : ""),
          "use RDMA between hosts: an instance with ERI/eRDMA or InfiniBand, the RDMA drivers (libibverbs, rdma-core) "
          "in the image, and NCCL_IB_HCA naming the devices (erdma_0 / mlx5_0); NCCL >= 2.19 for eRDMA");
    auto p2pDisable = n.envOverrides.find("NCCL_P2P_DISABLE");
    auto p2pLevel = n.envOverrides.find("NCCL_P2P_LEVEL");
    bool shmEdges = n.transports.count(TransportClass::kShm) > 0;
    if ((p2pDisable != n.envOverrides.end() && p2pDisable->second == "1") || p2pLevel != n.envOverrides.end() || shmEdges)
      add("p2p_disabled", Severity::kWarning, {},
          fmt::format("GPUs on one host talk through host memory{}{}", shmEdges ? " (SHM edges)" : "",
                      p2pDisable != n.envOverrides.end() ? " with NCCL_P2P_DISABLE=" + p2pDisable->second
                      : p2pLevel != n.envOverrides.end() ? " with NCCL_P2P_LEVEL=" + p2pLevel->second : ""),
          "unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL; for communication-heavy jobs choose an NVLink instance (gn7, gn7e)");
    if (n.gdrdma == false)
      add("no_gdr", Severity::kInfo, {}, "network edges without GPUDirect RDMA (no /GDRDMA on NET edges)",
          "load nvidia-peermem (GPUDirect RDMA) and set NCCL_NET_GDR_LEVEL (e.g. SYS on eRDMA instances, where GDR is off by default)");
    double slowest = 0;
    for (const auto& timing : n.initTimings) slowest = std::max(slowest, timing.totalSeconds);
    if (slowest > 10)
      add("init_slow", Severity::kWarning, {}, fmt::format("NCCL communicator init took up to {:.1f} s", slowest),
          "check bootstrap networking (NCCL_SOCKET_IFNAME), DNS, and that every rank starts at the same time");
  }
  if (!t.missingRanks.empty())
    add("missing_ranks", Severity::kWarning, t.missingRanks,
        fmt::format("{} of {} ranks wrote no timings", t.missingRanks.size(), run.worldSize.value_or(0)),
        "a rank that wrote nothing failed early or ran without DDPRUN_RUN_DIR; check its log");
  if (t.stepsAnalysed == 0) return out;

  // GPUs idle while their rank waits, and "fake busy" GPUs (../shared/gpu-guide.md): NVML's
  // GPU-Util counts any running kernel, and NCCL's kernels run while they wait for the network.
  for (const auto& u : t.utilisation) {
    if (!u.gpuUtilPctMean) continue;
    auto rank = std::find_if(t.ranks.begin(), t.ranks.end(), [&](const RankTiming& r) { return r.rank == u.rank; });
    if (rank == t.ranks.end() || rank->stepMsMedian <= 0) continue;
    const double wait = rank->phaseMsMean[static_cast<size_t>(Phase::kCommWait)] / rank->stepMsMedian;
    const double data = rank->phaseMsMean[static_cast<size_t>(Phase::kData)] / rank->stepMsMedian;
    if (*u.gpuUtilPctMean < 50 && wait + data >= 0.3)
      add("gpu_idle", Severity::kWarning, {u.rank},
          fmt::format("rank {}'s GPU was busy {:.0f} % of the time on average while the rank spent {} of each step waiting "
                      "({} on communication, {} on data)",
                      u.rank, *u.gpuUtilPctMean, pct(wait + data), pct(wait), pct(data)),
          data >= wait ? "feed the GPU: more data-loader workers, pinned memory, prefetching, faster storage"
                       : "hide communication: larger batches, gradient bucketing that overlaps backward, NVLink/RDMA");
    else if (*u.gpuUtilPctMean >= 90 && wait >= 0.3)
      add("gpu_fake_busy", Severity::kWarning, {u.rank},
          fmt::format("rank {}'s GPU shows {:.0f} % utilisation, yet {} of each step is spent waiting for communication: "
                      "NCCL's kernels count as busy while they wait",
                      u.rank, *u.gpuUtilPctMean, pct(wait)),
          "do not trust GPU-Util alone; reduce the exposed communication (see comm_bound) or find the rank the others wait for");
  }

  const double exposed = t.exposedCommShare;
  if (exposed >= 0.25)
    add("comm_bound", exposed >= 0.5 ? Severity::kCritical : Severity::kWarning, {},
        fmt::format("ranks wait {} of each step for gradient communication they could not overlap{}", pct(exposed),
                    t.overlapFraction ? fmt::format(" ({} of communication hidden behind backward)", pct(*t.overlapFraction)) : ""),
        "use DDP (not DataParallel) with NCCL; larger batches per GPU; tune the bucket size (--bucket-mb); an NVLink "
        "instance within a host and ERI/RDMA between hosts");
  if (t.straggler) {
    const auto& s = *t.straggler;
    add("straggler", Severity::kWarning, {s.rank},
        fmt::format("rank {} was the slowest in {} of steps, computing {:.1f} ms longer than the others' median; the "
                    "others waited {:.1f} ms per step for it",
                    s.rank, pct(s.slowestShare), s.extraComputeMs, s.othersWaitMs),
        "check that rank's host and GPU (clocks, thermal throttling, other jobs: nvidia-smi), its data shard and loader, "
        "and CPU binding; every rank waits for the slowest at each allreduce");
  }
  if (t.imbalanceRun >= 1.15 && !t.straggler)
    add("load_imbalance", Severity::kWarning, {},
        fmt::format("compute differs between ranks: slowest/mean = {:.2f} over the run (per step median {:.2f})",
                    t.imbalanceRun, t.imbalanceStepMedian),
        "balance the work per rank: equal shard sizes (a distributed sampler), equal sequence lengths per batch, same hardware");
  if (share(t, Phase::kData) >= 0.3)
    add("data_bound", share(t, Phase::kData) >= 0.5 ? Severity::kCritical : Severity::kWarning, {},
        fmt::format("loading data takes {} of each step", pct(share(t, Phase::kData))),
        "more data-loader workers (about the CPU cores), pinned memory and prefetching, faster storage (local NVMe), "
        "efficient shard formats");
  double computeMs = 0;
  for (const auto& r : t.ranks)
    computeMs += r.phaseMsMean[static_cast<size_t>(Phase::kForward)] + r.phaseMsMean[static_cast<size_t>(Phase::kBackward)];
  computeMs /= static_cast<double>(std::max<size_t>(1, t.ranks.size()));
  if (t.commMsMean > 0 && computeMs > 0 && t.commMsMean >= 0.5 * computeMs && exposed < 0.25)
    add("small_batch", Severity::kInfo, {},
        fmt::format("gradient communication ({:.1f} ms per step) is comparable to forward + backward ({:.1f} ms): "
                    "at this batch size synchronisation is a large part of the work",
                    t.commMsMean, computeMs),
        "a larger batch per rank (or gradient accumulation with no_sync) amortises the allreduce over more samples");
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return out;
}

}  // namespace ddp::profiler
