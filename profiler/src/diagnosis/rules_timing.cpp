// Rules on where the step goes: communication the backward pass could not hide (and whether the
// link or something else made it slow), a straggler, imbalance, data loading, a small batch.
#include "ddp/common/text.hpp"
#include "diagnosis/rules.hpp"
#include "stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ddp::profiler::rules {
namespace {

constexpr double kCommBoundCritical = 0.5;  // the transfer's share of the step: critical
constexpr double kLinkLimitShare = 0.5;  // allreduces at this share of the link's busbw or more: the link is the limit
constexpr double kSlowerThanLinkShare = 0.25;  // below this share: something other than the link slows them
constexpr double kStragglerSureShare = 0.9;    // slowest in this share of the steps: sure
constexpr double kImbalanceRatio = 1.15;       // slowest/mean compute over the run: load_imbalance
constexpr double kDataBoundCritical = 0.5;
constexpr double kSmallBatchCommRatio = 0.5;  // communication / (forward + backward): small_batch (info)
// small_batch as a warning: communication takes longer than forward + backward, the step waits for it
// kCommBoundShare or more, and most of that wait is the transfer itself, not a late peer.
constexpr double kSmallBatchWarnCommRatio = 1.0;
constexpr double kSmallBatchTransferOfExposed = 0.5;

// What the link delivers for an allreduce of about the job's gradient bytes: the ddpbench result
// in the run directory at the nearest size (the same backend when there is one).
struct Reference {
  double busbwGbps = 0;
  std::string source;
};
std::optional<Reference> linkReference(const RunData& run, const TimingAnalysis& t) {
  if (t.allreduceBytesPerStep == 0) return std::nullopt;
  const auto best = nearestAllreduceBench(run, t.allreduceBytesPerStep);
  if (!best) return std::nullopt;
  return Reference{best->busbwGbps, fmt::format("ddpbench's {} allreduce of {} bytes at {} ranks", best->backend,
                                                best->bytes, best->nranks)};
}

std::string linkName(const HostLink& l) { return l.from + " → " + l.to; }

// The evidence and the fix of a slow link (or host).
std::pair<std::string, std::string> slowLinkText(const SlowLinks& s) {
  std::string slow;
  for (size_t i = 0; i < s.slow.size(); ++i)
    slow += fmt::format("{}{} {}",
                        i == 0                   ? ""
                        : i + 1 == s.slow.size() ? " and "
                                                 : ", ",
                        linkName(s.slow[i]), formatRate(s.slow[i].mbitPerS()));
  std::string evidence =
      fmt::format("; the links between hosts, as their TCP connections delivered while sending: {} against {} on {}",
                  slow, formatRate(s.fastest.mbitPerS()), linkName(s.fastest));
  if (!s.hosts.empty())
    return {evidence + fmt::format(": every link of {} is slow, and the ring runs at its slowest link",
                                   fmt::join(s.hosts, " and ")),
            fmt::format("{}'s network first: its NIC and bandwidth limit (ethtool, tc qdisc, the instance's network "
                        "bandwidth), other traffic on it; or run on hosts without it",
                        fmt::join(s.hosts, " and "))};
  return {evidence + ": the ring runs at its slowest link",
          fmt::format("the link {} first: the route between those hosts, their NICs and bandwidth limits (ethtool, "
                      "tc qdisc), other traffic on it",
                      linkName(s.slow.front()))};
}

double forwardBackwardMs(const TimingAnalysis& t) {
  double ms = 0;
  for (const auto& r : t.ranks) ms += r.phaseMsMedian[Phase::kForward] + r.phaseMsMedian[Phase::kBackward];
  return ms / static_cast<double>(std::max<size_t>(1, t.ranks.size()));
}

}  // namespace

// Communication is the bottleneck only when even the last rank to arrive at the gradient allreduce
// waits for it: a rank that waits for a late peer is the peer's problem (straggler, contention,
// stalls). Measured against the link where the run has its ddpbench results.
void commBound(const RunData& run, const TimingAnalysis& t, Findings& out) {
  if (t.transferShare < kCommBoundShare) return;
  const auto ref = linkReference(run, t);
  // What the allreduces reached of what the link delivers; 0 where either is unknown.
  const double ratio = ref && t.allreduceBusbwGbps ? *t.allreduceBusbwGbps / ref->busbwGbps : 0.0;
  std::string evidence = fmt::format(
      "even the last rank to reach the gradient allreduce waited {} of each step for it: communication the backward "
      "pass could not hide{}",
      percent(t.transferShare, 0),
      t.overlapFraction ? fmt::format(" ({} of it hidden)", percent(*t.overlapFraction, 0)) : "");
  if (t.allreduceBusbwGbps)
    evidence += fmt::format("; the allreduces ran at {:.3g} GB/s bus bandwidth", *t.allreduceBusbwGbps);
  if (ratio > 0)
    evidence +=
        fmt::format(", {} of what the link delivers ({}: {:.3g} GB/s)", percent(ratio, 0), ref->source, ref->busbwGbps);
  if (const auto& slow = t.slowLinks) {
    const auto [more, fix] = slowLinkText(*slow);
    add(out, FindingKind::kCommBound, t.transferShare >= kCommBoundCritical ? Severity::kCritical : Severity::kWarning,
        {}, evidence + more, fix + "; then a faster link (ERI/RDMA between hosts)", Confidence::kHigh,
        "ddpbench --op allreduce on two hosts of the slow link, and on two others (ddprun -H A:1,B:1 ddpbench): the "
        "slow pair shows the same rate")
        .hosts = slow->hosts;
    return;
  }
  if (ratio > 0 && ratio < kSlowerThanLinkShare) {
    add(out, FindingKind::kCommBound, Severity::kWarning, {}, evidence + ": something other than the link slows them",
        "look for what slows the collectives rather than for a faster link: CPU contention on the ranks' hosts, other "
        "traffic on the network, a misconfigured transport",
        Confidence::kLow, "ddpbench on the same hosts while the job is not running, and again while it is");
    return;
  }
  const bool smallCompute = t.commMsMean >= forwardBackwardMs(t);
  add(out, FindingKind::kCommBound, t.transferShare >= kCommBoundCritical ? Severity::kCritical : Severity::kWarning,
      {}, evidence,
      smallCompute
          ? "more compute per gradient exchange first: a larger batch per rank, or gradient accumulation "
            "(no_sync); then a faster link (an NVLink instance within a host, ERI/RDMA between hosts)"
          : "hide more of it: gradient buckets that overlap backward (DDP's bucket_cap_mb, train's --bucket-mb), "
            "DDP (not DataParallel) with NCCL; then a faster link (an NVLink instance within a host, ERI/RDMA between "
            "hosts)",
      ratio >= kLinkLimitShare ? Confidence::kHigh : Confidence::kMedium,
      "ddpbench --op allreduce at the gradient size on the same hosts: its busbw is what the link delivers");
}

std::optional<GrownPhase> grownPhase(const TimingAnalysis& t, int rank, double extraMs) {
  std::optional<GrownPhase> best;
  double bestExcess = 0;
  for (Phase p : kPhases) {
    if (p == Phase::kCommWait) continue;
    std::vector<double> others;
    double own = 0;
    for (const auto& r : t.ranks) {
      if (r.rank == rank)
        own = r.phaseMsMedian[p];
      else
        others.push_back(r.phaseMsMedian[p]);
    }
    if (others.empty()) continue;
    std::sort(others.begin(), others.end());
    const double theirs = others[others.size() / 2];
    if (own - theirs > bestExcess) {
      bestExcess = own - theirs;
      best = GrownPhase{p, own, theirs};
    }
  }
  if (!best || bestExcess < 0.5 * extraMs) return std::nullopt;
  return best;
}

namespace {

constexpr double kOnCpuShare = 0.7;        // the others' thread on the CPU this much of their compute: CPU time tells
constexpr double kOnCpuExtraShare = 0.7;   // the straggler's extra CPU time, of its extra compute: spent on the CPU
constexpr double kOffCpuExtraShare = 0.3;  // ... at most: spent off the CPU
constexpr double kSizeablePhase = 0.1;     // of the others' compute: a phase that counts in "grew alike"
constexpr double kAlikeShare = 0.5;        // each such phase grew by this share of the compute's growth or more

// Where a straggler's extra compute went, by its training thread's CPU time (cpu_ms): on the CPU
// (it computed more, or the same work ran slower) or off it (asleep, blocked, waiting for a CPU).
// Only for ranks that compute on the CPU (no GPU samples, no NCCL log, no source record naming a
// CUDA device) and whose thread was on the CPU for most of the others' compute: a thread whose work
// intra-op threads or a GPU do (spinning while it waits for the GPU) tells nothing by its CPU time.
struct ExtraTime {
  bool onCpu = false;
  double ownCpuMs = 0, othersCpuMs = 0;
};
std::optional<ExtraTime> extraTime(const RunData& run, const TimingAnalysis& t, const Straggler& s) {
  if (run.nccl ||
      std::any_of(t.utilisation.begin(), t.utilisation.end(),
                  [](const RankUtilisation& u) { return u.gpuUtilPctMean.has_value(); }) ||
      std::any_of(run.sources.begin(), run.sources.end(),
                  [](const auto& source) { return source.second.device.rfind("cuda", 0) == 0; }))
    return std::nullopt;
  std::optional<double> own;
  std::vector<double> othersCpu, othersWall;
  for (const auto& r : t.ranks) {
    if (!r.computeCpuMsMedian) return std::nullopt;
    if (r.rank == s.rank) {
      own = r.computeCpuMsMedian;
    } else {
      othersCpu.push_back(*r.computeCpuMsMedian);
      othersWall.push_back(r.computeMsMedian);
    }
  }
  const double theirs = detail::median(othersCpu);
  if (!own || theirs < kOnCpuShare * detail::median(othersWall)) return std::nullopt;
  const double extraCpu = *own - theirs;
  if (extraCpu >= kOnCpuExtraShare * s.extraComputeMs) return ExtraTime{true, *own, theirs};
  if (extraCpu <= kOffCpuExtraShare * s.extraComputeMs) return ExtraTime{false, *own, theirs};
  return std::nullopt;
}

// "data ×1.40, forward ×1.41, backward ×1.38" when every sizeable phase of the rank grew alike
// against the others' medians (at least two of them): the whole step slowed, not one part of it.
std::optional<std::string> grewAlike(const TimingAnalysis& t, int rank) {
  PhaseArray<double> own, theirs;
  for (Phase p : kPhases) {
    std::vector<double> others;
    for (const auto& r : t.ranks) {
      if (r.rank == rank)
        own[p] = r.phaseMsMedian[p];
      else
        others.push_back(r.phaseMsMedian[p]);
    }
    theirs[p] = p == Phase::kCommWait ? 0 : detail::median(others);
  }
  own[Phase::kCommWait] = 0;
  const double theirsTotal = std::accumulate(theirs.begin(), theirs.end(), 0.0);
  if (theirsTotal <= 0) return std::nullopt;
  const double growth = std::accumulate(own.begin(), own.end(), 0.0) / theirsTotal - 1;
  std::string out;
  int phases = 0;
  for (Phase p : kPhases) {
    if (theirs[p] < kSizeablePhase * theirsTotal) continue;
    const double ratio = own[p] / theirs[p];
    if (growth <= 0 || ratio - 1 < kAlikeShare * growth) return std::nullopt;
    out += fmt::format("{}{} ×{:.2f}", out.empty() ? "" : ", ", phaseName(p), ratio);
    ++phases;
  }
  return phases >= 2 ? std::optional<std::string>(out) : std::nullopt;
}

}  // namespace

void straggler(const RunData& run, const TimingAnalysis& t, Findings& out) {
  if (!t.straggler) return;
  const auto& s = *t.straggler;
  const auto grown = grownPhase(t, s.rank, s.extraComputeMs);
  const auto where = extraTime(run, t, s);
  const auto alike = where && where->onCpu ? grewAlike(t, s.rank) : std::nullopt;
  std::string evidence = fmt::format(
      "rank {} was the slowest in {} of steps, computing {:.1f} ms longer than the others' median; the "
      "others waited {:.1f} ms per step for it",
      s.rank, percent(s.slowestShare, 0), s.extraComputeMs, s.othersWaitMs);
  if (alike)
    evidence += fmt::format(
        "; every phase of its step grew alike ({}) and its training thread was on the CPU all that time ({:.1f} ms "
        "of CPU time a step against {:.1f} ms on the others): the same work ran slower on its core",
        *alike, where->ownCpuMs, where->othersCpuMs);
  else if (grown)
    evidence += fmt::format("; its extra time is in {}: {:.1f} ms a step against {:.1f} ms on the others",
                            phaseName(grown->phase), grown->ownMs, grown->othersMs);
  if (where && !alike)
    evidence += where->onCpu ? fmt::format(
                                   "; its training thread was on the CPU for it ({:.1f} ms of CPU time a "
                                   "step against {:.1f} ms on the others): it computed more",
                                   where->ownCpuMs, where->othersCpuMs)
                             : fmt::format(
                                   "; its training thread used no more CPU than the others' ({:.1f} ms a step "
                                   "against {:.1f} ms): the extra time was spent off the CPU (asleep, blocked "
                                   "on I/O or a lock, or waiting for a CPU)",
                                   where->ownCpuMs, where->othersCpuMs);
  std::string fix =
      "check that rank's host and GPU (clocks, thermal throttling, other jobs: nvidia-smi, top), its data shard "
      "and loader, and CPU binding; every rank waits for the slowest at each allreduce";
  if (alike)
    fix = fmt::format(
        "look at rank {}'s core: a lower clock, a busy SMT sibling or another guest on the same physical core (steal "
        "time does not show these); move the rank to another core or host and see whether the slowness stays with "
        "the core; every rank waits for the slowest at each allreduce",
        s.rank);
  else if (grown && grown->phase == Phase::kData)
    fix = fmt::format(
        "find why rank {}'s data is slower: its shard (size, format), the disk or network it reads from, its "
        "DataLoader (workers, transform); every rank waits for it at each allreduce",
        s.rank);
  add(out, FindingKind::kStraggler, Severity::kWarning, {s.rank}, evidence, fix,
      s.slowestShare >= kStragglerSureShare ? Confidence::kHigh : Confidence::kMedium,
      alike ? fmt::format("the same job with rank {} pinned to another core (taskset -c), and a one-rank run on its "
                          "core against one on another",
                          s.rank)
            : fmt::format("top and nvidia-smi on rank {}'s host while it runs; trace.json shows its steps against the "
                          "others'",
                          s.rank));
}

void loadImbalance(const RunData&, const TimingAnalysis& t, Findings& out) {
  if (t.imbalanceRun < kImbalanceRatio || t.straggler) return;
  add(out, FindingKind::kLoadImbalance, Severity::kWarning, {},
      fmt::format("compute differs between ranks: slowest/mean = {:.2f} over the run (per step median {:.2f})",
                  t.imbalanceRun, t.imbalanceStepMedian),
      "balance the work per rank: equal shard sizes (a distributed sampler), equal sequence lengths per batch, same "
      "hardware",
      Confidence::kMedium, "the per-rank table: compute and data per rank");
}

// The CPUs each rank of a host has, from the utilisation samples (0 when not sampled).
int coresPerRank(const RunData& run, const TimingAnalysis& t) {
  int least = 0;
  for (const auto& [host, ranks] : ranksByHost(run, t))
    for (const auto& u : t.utilisation)
      if (u.rank == ranks.front() && u.hostCpus) {
        const int each = std::max(1, *u.hostCpus / static_cast<int>(ranks.size()));
        least = least == 0 ? each : std::min(least, each);
      }
  return least;
}

// The training DataLoader of each rank that reported its loaders (Python ranks): the one it took
// most batches from.
std::map<int, DataLoaderFacts> trainingLoaders(const RunData& run) {
  std::map<int, DataLoaderFacts> out;
  for (const auto& [rank, source] : run.sources)
    if (const auto* loader = source.busiestLoader()) out[rank] = *loader;
  return out;
}

// How much of the time a rank's DataLoader workers were on the CPU (their CPU over their count,
// the mean over the ranks' samples) and how many were in I/O: busy workers are held back by the
// transform, idle ones by what they read.
constexpr double kWorkersWaitShare = 0.5;     // each worker on the CPU less than this: they wait
constexpr double kWorkersBusyShare = 0.8;     // ... this much or more: they compute
constexpr double kWorkersCpuWaitShare = 0.2;  // each worker waiting for a CPU this much: short of cores
struct WorkersBusy {
  double cpuShare = 0, inIo = 0, cpuWait = 0;
};
std::optional<WorkersBusy> workersBusy(const TimingAnalysis& t, const std::vector<int>& ranks) {
  double share = 0, io = 0, wait = 0;
  int n = 0;
  for (const auto& u : t.utilisation)
    if (std::count(ranks.begin(), ranks.end(), u.rank) && u.helpersMean && *u.helpersMean > 0 && u.helpersCpuPctMean) {
      share += *u.helpersCpuPctMean / 100 / *u.helpersMean;
      io += u.helpersInIoMean.value_or(0);
      wait += u.helpersDelayPctMean.value_or(0) / 100;
      ++n;
    }
  if (n == 0) return std::nullopt;
  return WorkersBusy{share / n, io / n, wait / n};
}

// A data-bound Python job whose DataLoader settings are known: what to change in them.
bool dataloaderStarved(const RunData& run, const TimingAnalysis& t, double data, Findings& out) {
  const auto loaders = trainingLoaders(run);
  if (loaders.empty()) return false;
  std::vector<int> ranks;
  int workers = 1 << 30;
  bool pinned = true, cuda = false;
  for (const auto& [rank, l] : loaders) {
    ranks.push_back(rank);
    workers = std::min(workers, l.numWorkers);
    pinned = pinned && l.pinMemory;
  }
  for (const auto& [rank, s] : run.sources) cuda = cuda || s.device.rfind("cuda", 0) == 0;
  const int cores = coresPerRank(run, t);
  const std::string target = cores > 1    ? fmt::format("up to {} (the cores each rank has)", cores)
                             : cores == 1 ? "1 or 2 (each rank has one core here: more cores per rank let more workers "
                                            "help)"
                                          : "a few per rank";
  std::string evidence =
      fmt::format("loading data takes {} of each step; the training DataLoader ({}) has num_workers={}",
                  percent(data, 0), (ranks.size() == 1 ? "rank " : "ranks ") + rankList(ranks), workers);
  evidence += workers == 0 ? ": the training process itself loads and transforms every batch while the model waits"
                           : ": its workers do not keep up with the model";
  // Why the workers do not keep up: they wait for a CPU (they share the training loop's cores),
  // they wait off the CPU (reads), or they compute (the transform).
  enum class Limit { kUnknown, kCores, kReads, kTransform } limit = Limit::kUnknown;
  const auto busy = workers > 0 ? workersBusy(t, ranks) : std::nullopt;
  if (busy) {
    limit = busy->cpuWait >= kWorkersCpuWaitShare ? Limit::kCores
            : busy->cpuShare < kWorkersWaitShare  ? Limit::kReads
            : busy->cpuShare >= kWorkersBusyShare ? Limit::kTransform
                                                  : Limit::kUnknown;
    evidence +=
        fmt::format("; each worker was on the CPU {} of the time and waited for one {}{}: {}",
                    percent(busy->cpuShare, 0), percent(busy->cpuWait, 0),
                    busy->inIo > 0 ? fmt::format(" ({:.1f} of them in I/O when sampled, on average)", busy->inIo) : "",
                    limit == Limit::kCores   ? "they wait for the cores the training loop computes on"
                    : limit == Limit::kReads ? "they wait off the CPU, on reads (or a remote source, a sleep, a lock)"
                    : limit == Limit::kTransform ? "they are busy computing: the transform is the limit"
                                                 : "they both compute and wait");
  }
  if (cuda && !pinned) evidence += "; pin_memory=False on a GPU";
  std::string fix =
      workers == 0 ? fmt::format("DataLoader(num_workers=N) with N {}, persistent_workers=True", target)
      : limit == Limit::kCores
          ? "cores for the workers: more cores per rank (fewer ranks per host, taskset / mpirun --map-by "
            "slot:PE=N), or fewer, cheaper workers; workers that share the training loop's core only take turns with it"
      : limit == Limit::kReads
          ? fmt::format(
                "faster storage for the dataset (local NVMe, a page-cache-sized working set, a packed shard format "
                "read sequentially); meanwhile more workers overlap the waits: workers that wait use no core, so "
                "more of them than cores ({} now) help",
                workers)
          : fmt::format(
                "more workers ({}), or a cheaper transform: move it to the GPU, or "
                "precompute it once",
                target);
  if (cuda && !pinned) fix += "; pin_memory=True";
  if (limit == Limit::kUnknown || limit == Limit::kTransform)
    fix += "; then faster storage (local NVMe) if the workers wait on reads";
  add(out, FindingKind::kDataloaderStarved, data >= kDataBoundCritical ? Severity::kCritical : Severity::kWarning, {},
      evidence, fix, workers == 0 || data >= kDataBoundCritical ? Confidence::kHigh : Confidence::kMedium,
      "time one pass over the DataLoader alone (for batch in loader: pass) against the step time");
  return true;
}

// The data wait is lost time as it stands (the accounting's data part): a finding from the healthy
// share of the run on.
void dataBound(const RunData& run, const TimingAnalysis& t, Findings& out) {
  const double data = t.phaseShare[Phase::kData];
  if (data < kDataFindingShare || dataloaderStarved(run, t, data, out)) return;
  add(out, FindingKind::kDataBound, data >= kDataBoundCritical ? Severity::kCritical : Severity::kWarning, {},
      fmt::format("loading data takes {} of each step{}", percent(data, 0),
                  data < kDataBoundShare ? ", all of it time the model waits" : ""),
      "load the next batches while the model computes: data-loader workers (about the CPU cores), pinned memory and "
      "prefetching; then faster storage (local NVMe), efficient shard formats",
      data >= kDataBoundCritical ? Confidence::kHigh : Confidence::kMedium,
      "iterate the data loader alone, without training, and time a batch");
}

// Communication comparable to the compute it pays for (comm_bound takes over once the transfer
// alone is kCommBoundShare of the step). A warning when it outlasts forward + backward and the
// step waits for it, mostly for the transfer: on one host that is the batch, not the link.
void smallBatch(const RunData&, const TimingAnalysis& t, Findings& out) {
  const double computeMs = forwardBackwardMs(t);
  if (t.commMsMean <= 0 || computeMs <= 0 || t.commMsMean < kSmallBatchCommRatio * computeMs ||
      t.transferShare >= kCommBoundShare)
    return;
  const double exposed = t.phaseShare[Phase::kCommWait];
  const bool warn = t.commMsMean >= kSmallBatchWarnCommRatio * computeMs && exposed >= kCommBoundShare &&
                    t.transferShare >= kSmallBatchTransferOfExposed * exposed;
  std::string evidence = fmt::format(
      "gradient communication ({:.1f} ms per step) is comparable to forward + "
      "backward ({:.1f} ms): at this batch size synchronisation is a large part of "
      "the work",
      t.commMsMean, computeMs);
  if (warn)
    evidence = fmt::format(
        "gradient communication ({:.1f} ms per step) takes longer than forward + backward ({:.1f} ms), and each step "
        "waits {} for it, {} for the transfer itself (not for a late peer): at this batch size synchronisation is "
        "most of the work",
        t.commMsMean, computeMs, percent(exposed, 0), percent(t.transferShare, 0));
  add(out, FindingKind::kSmallBatch, warn ? Severity::kWarning : Severity::kInfo, {}, evidence,
      "a larger batch per rank (or gradient accumulation with no_sync) amortises the allreduce over more samples",
      Confidence::kMedium, "rerun with twice the batch per rank: the communication's share should fall");
}

}  // namespace ddp::profiler::rules
