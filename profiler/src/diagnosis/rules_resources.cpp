// Rules on the resources the ranks ran on, from the utilisation samples and the timings: CPU
// contention (oversubscribed hosts, a rank waiting for a CPU, a CPU quota, steal), stalls, GPU
// throttling, idle and fake-busy GPUs.
#include "ddp/common/text.hpp"
#include "diagnosis/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace ddp::profiler::rules {
namespace {

constexpr double kRunDelayPct = 20;          // a rank waiting for a CPU this much of its time: contention
constexpr double kRunDelayCriticalPct = 50;  // ... critical
constexpr double kRunDelaySurePct = 30;      // ... sure of it even without another process named
constexpr double kThrottledPct = 10;         // held back by its cgroup's CPU quota this much
constexpr double kThrottledCriticalPct = 40;
constexpr double kFillsCpusShare = 0.85;      // a rank using this share of its CPUs by itself fills them
constexpr double kStealPct = 10;              // the hypervisor took this much of the host's CPU
constexpr size_t kStallMinCount = 2;          // stalled steps before they are a finding ...
constexpr double kStallMinShare = 0.05;       // ... and their excess time as a share of the run
constexpr double kStallWarnShare = 0.10;      // ... a warning from this share on
constexpr double kGpuIdleUtilPct = 50;        // GPU-Util below this ...
constexpr double kGpuIdleWaitShare = 0.3;     // ... while the rank waits (data + comm) this much: gpu_idle
constexpr double kFakeBusyUtilPct = 90;       // GPU-Util above this ...
constexpr double kFakeBusyWaitShare = 0.3;    // ... while the rank waits in comm this much: gpu_fake_busy
constexpr double kThrottleSampleShare = 0.2;  // samples with a clock limit active: gpu_throttled ...
constexpr double kThrottleClockShare = 0.9;   // ... when the SM clock averaged below this share of its maximum

const RankTiming* timingOf(const TimingAnalysis& t, int rank) {
  for (const auto& r : t.ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

std::string range(double lo, double hi) {
  return fmt::format("{:.0f}", lo) == fmt::format("{:.0f}", hi) ? fmt::format("{:.0f}", lo)
                                                                : fmt::format("{:.0f}–{:.0f}", lo, hi);
}

// Whether two CPU lists have a CPU in common.
bool overlaps(const std::vector<int>& a, const std::vector<int>& b) {
  return std::any_of(b.begin(), b.end(), [&](int c) { return std::find(a.begin(), a.end(), c) != a.end(); });
}

// Outside processes that may run where the rank may (all of them when either list is unknown).
std::vector<OtherProcess> competitors(const RankUtilisation& u) {
  std::vector<OtherProcess> out;
  const auto mine = u.cpus ? parseCpuList(*u.cpus) : std::vector<int>{};
  for (const auto& o : u.others) {
    const auto theirs = o.cpus.empty() ? std::vector<int>{} : parseCpuList(o.cpus);
    if (mine.empty() || theirs.empty() || overlaps(mine, theirs)) out.push_back(o);
  }
  return out;
}

// "; the others waited 41.2 ms per step for it" when it is the rank they wait for.
std::string waitedFor(const TimingAnalysis& t, int rank) {
  if (t.straggler && t.straggler->rank == rank)
    return fmt::format("; the others waited {:.1f} ms per step for it (it was the slowest in {} of steps)",
                       t.straggler->othersWaitMs, percent(t.straggler->slowestShare, 0));
  const RankTiming* r = timingOf(t, rank);
  return r && r->stalls > 0 ? fmt::format("; the others waited for it in {} stalled step(s)", r->stalls) : "";
}

}  // namespace

bool outsideTakesCpu(const TimingAnalysis& t, int rank) {
  constexpr double kSeenPct = 1;
  const RankUtilisation* u = utilisationOf(t, rank);
  return u && (!competitors(*u).empty() || u->throttledPctMean.value_or(0) >= kSeenPct ||
               u->stealPctMean.value_or(0) >= kSeenPct);
}

const RankUtilisation* utilisationOf(const TimingAnalysis& t, int rank) {
  for (const auto& u : t.utilisation)
    if (u.rank == rank) return &u;
  return nullptr;
}

std::string describeOthers(const std::vector<OtherProcess>& others, std::string_view cpuPrefix) {
  std::string out;
  for (const auto& o : others)
    out += fmt::format("{}{} (pid {}, {}{:.0f} % CPU{})", out.empty() ? "" : ", ", o.name, o.pid, cpuPrefix, o.cpuPct,
                       o.cpus.empty() ? "" : " on CPU(s) " + o.cpus);
  return out;
}

std::vector<CrowdedHost> crowdedHosts(const RunData& run, const TimingAnalysis& t) {
  std::vector<CrowdedHost> out;
  for (const auto& [host, ranks] : ranksByHost(run, t)) {
    CrowdedHost c{host, ranks, {}, 1e300, 0};
    bool known = true;
    for (int r : ranks) {
      const RankUtilisation* u = utilisationOf(t, r);
      if (!u || !u->cpus || !u->runDelayPctMean) {
        known = false;
        break;
      }
      for (int cpu : parseCpuList(*u->cpus)) c.cpus.insert(cpu);
      c.runDelayPctLo = std::min(c.runDelayPctLo, *u->runDelayPctMean);
      c.runDelayPctHi = std::max(c.runDelayPctHi, *u->runDelayPctMean);
    }
    if (known && ranks.size() > c.cpus.size() && c.runDelayPctHi >= kRunDelayPct) out.push_back(std::move(c));
  }
  return out;
}

namespace {

size_t cpuCount(const RankUtilisation& u) {
  return u.cpus ? parseCpuList(*u.cpus).size() : static_cast<size_t>(u.hostCpus.value_or(0));
}

// Whether the job's own threads are more than the CPUs a rank may run on, so that what it waited
// for on the run queue was the job itself: its busy threads, with those of the job's other ranks
// that may run on the same CPUs, more than those CPUs (two ranks of four OpenMP threads each on two
// shared cores), or (samples without thread counts) its process group keeping all of them busy.
bool ownThreadsCompete(const TimingAnalysis& t, const RankUtilisation& u) {
  const auto cpus = static_cast<double>(cpuCount(u));
  if (cpus == 0) return false;
  if (!u.busyThreadsMean) return u.cpuPctMean >= kFillsCpusShare * 100 * cpus;
  double threads = *u.busyThreadsMean;
  std::set<int> all;
  if (u.cpus) {
    const auto mine = parseCpuList(*u.cpus);
    all.insert(mine.begin(), mine.end());
    for (const auto& v : t.utilisation) {
      if (v.rank == u.rank || !v.cpus || !v.busyThreadsMean) continue;
      const auto theirs = parseCpuList(*v.cpus);
      if (overlaps(mine, theirs)) {
        threads += *v.busyThreadsMean;
        all.insert(theirs.begin(), theirs.end());
      }
    }
  }
  return threads >= std::max(cpus, static_cast<double>(all.size())) + 0.5;
}

// Hosts whose ranks outnumber the CPUs they may run on; returns the ranks it covered.
std::set<int> oversubscribedHosts(const RunData& run, const TimingAnalysis& t, Findings& out) {
  std::set<int> covered;
  for (const auto& c : crowdedHosts(run, t)) {
    covered.insert(c.ranks.begin(), c.ranks.end());
    add(out, FindingKind::kCpuContention,
        c.ranks.size() >= 2 * c.cpus.size() ? Severity::kCritical : Severity::kWarning, c.ranks,
        fmt::format("{} ranks share {} CPU(s) ({}) on {}: each waited for a CPU {} % of its time (run queue), and "
                    "their communication, which needs the CPU too, slows with them ({} of the step exposed)",
                    c.ranks.size(), c.cpus.size(), formatCpuList({c.cpus.begin(), c.cpus.end()}),
                    c.host.empty() ? "one host" : c.host, range(c.runDelayPctLo, c.runDelayPctHi),
                    percent(t.exposedCommShare, 0)),
        fmt::format("run at most one rank per core: -np {} on this host, more hosts, or fewer ranks; a faster "
                    "interconnect will not help until each rank has a core",
                    c.cpus.size()),
        Confidence::kHigh, "nproc, and while it runs: ps -eLo psr,pcpu,comm --sort=-pcpu | head");
  }
  return covered;
}

// Ranks short of CPU, grouped by what holds them back (a quota, the same outside process, a run
// queue with nothing outside the job named): one finding per cause, naming all of its ranks.
void shortOfCpu(const TimingAnalysis& t, const std::vector<const RankUtilisation*>& ranks, Findings& out) {
  struct Group {
    std::vector<const RankUtilisation*> ranks;
    std::vector<OtherProcess> others;  // by pid, once each
  };
  std::map<std::string, Group> groups;  // "quota", "process NAME" or "queue"
  for (const RankUtilisation* u : ranks) {
    const bool quota = u->throttledPctMean.value_or(0) >= kThrottledPct;
    if (!quota && u->runDelayPctMean.value_or(0) < kRunDelayPct) continue;
    const auto others = competitors(*u);
    if (!quota && others.empty() && ownThreadsCompete(t, *u)) continue;  // threadsOversubscribed's
    Group& g = groups[quota ? "quota" : others.empty() ? "queue" : "process " + others.front().name];
    g.ranks.push_back(u);
    for (const auto& o : others)
      if (std::none_of(g.others.begin(), g.others.end(), [&](const OtherProcess& x) { return x.pid == o.pid; }))
        g.others.push_back(o);
  }
  for (const auto& [cause, g] : groups) {
    const bool quota = cause == "quota";
    std::vector<int> numbers;
    double delayLo = 1e300, delayHi = 0, throttledLo = 1e300, throttledHi = 0, quotaCores = 0;
    std::set<std::string> cpus;
    for (const RankUtilisation* u : g.ranks) {
      numbers.push_back(u->rank);
      delayLo = std::min(delayLo, u->runDelayPctMean.value_or(0));
      delayHi = std::max(delayHi, u->runDelayPctMean.value_or(0));
      throttledLo = std::min(throttledLo, u->throttledPctMean.value_or(0));
      throttledHi = std::max(throttledHi, u->throttledPctMean.value_or(0));
      quotaCores = std::max(quotaCores, u->cpuQuota.value_or(0));
      if (u->cpus) cpus.insert(*u->cpus);
    }
    const bool one = numbers.size() == 1;
    const std::string who = one ? fmt::format("rank {}", numbers.front()) : fmt::format("ranks {}", rankList(numbers));
    const std::string where =
        cpus.size() == 1 ? fmt::format("; {} may run on CPU(s) {}", one ? "it" : "they", *cpus.begin()) : "";
    std::string evidence = quota
                               ? fmt::format("{} {} held back by {} cgroup's CPU quota ({:.2g} cores) {} % of {} time",
                                             who, one ? "was" : "were", one ? "its" : "their", quotaCores,
                                             range(throttledLo, throttledHi), one ? "its" : "their")
                               : fmt::format("{} waited for a CPU {} % of {} time (run queue{})", who,
                                             range(delayLo, delayHi), one ? "its" : "their", where);
    if (!g.others.empty()) evidence += "; outside the job on the same CPUs: " + describeOthers(g.others);
    for (int r : numbers) evidence += waitedFor(t, r);
    const bool critical = delayHi >= kRunDelayCriticalPct || throttledHi >= kThrottledCriticalPct;
    const bool sure = quota || !g.others.empty() || delayLo >= kRunDelaySurePct;
    const std::string fix =
        quota ? fmt::format(
                    "raise the CPU quota of {} (cgroup cpu.max / cpu.cfs_quota_us) or run where there are whole "
                    "cores; every rank waits for the slowest at each allreduce",
                    who)
        : !g.others.empty()
            ? fmt::format(
                  "move {} off the CPU(s) of {}, or give each rank a core of its own (taskset, or "
                  "--mpi-args \"--bind-to core\" with one rank per core); every rank waits for the slowest at "
                  "each allreduce",
                  g.others.front().name, who)
            : fmt::format(
                  "find what else runs on the cores of {} (top -H on the host) and give each rank a core of its "
                  "own; every rank waits for the slowest at each allreduce",
                  who);
    add(out, FindingKind::kCpuContention, critical ? Severity::kCritical : Severity::kWarning, numbers, evidence, fix,
        sure ? Confidence::kHigh : Confidence::kMedium,
        quota ? "grep throttled cpu.stat of the rank's cgroup (/proc/PID/cgroup says which)"
              : "top -H -p PID of the rank, and taskset -pc PID, on its host while it runs");
  }
}

}  // namespace

void cpuContention(const RunData& run, const TimingAnalysis& t, Findings& out) {
  const auto covered = oversubscribedHosts(run, t, out);
  std::vector<const RankUtilisation*> rest;
  for (const auto& u : t.utilisation)
    if (!covered.count(u.rank)) rest.push_back(&u);
  shortOfCpu(t, rest, out);
  std::vector<int> stolen;
  double steal = 0;
  for (const auto& u : t.utilisation)
    if (u.stealPctMean && *u.stealPctMean >= kStealPct)
      stolen.push_back(u.rank), steal = std::max(steal, *u.stealPctMean);
  if (!stolen.empty())
    add(out, FindingKind::kCpuContention, Severity::kWarning, stolen,
        fmt::format("the hypervisor gave {} of the CPUs of rank(s) {}'s host(s) to other guests (steal time)",
                    percent(steal / 100, 0), rankList(stolen)),
        "a dedicated or bare-metal instance (ebm*), or an instance size whose vCPUs are not shared",
        Confidence::kMedium, "vmstat 1 on the host: the st column");
}

// A rank with more busy threads than CPUs, whose busiest thread waits for a CPU while nothing
// outside the job runs there: its own threads compete (an OpenMP pool sized for the host on a
// rank pinned to one core, a communication thread that wakes or busy-polls beside the compute).
void threadsOversubscribed(const RunData& run, const TimingAnalysis& t, Findings& out) {
  std::set<int> crowded;
  for (const auto& c : crowdedHosts(run, t)) crowded.insert(c.ranks.begin(), c.ranks.end());
  std::vector<int> ranks;
  double delayLo = 1e300, delayHi = 0, threadsLo = 1e300, threadsHi = 0, cpuLo = 1e300, cpuHi = 0;
  std::set<size_t> cpuCounts;
  std::vector<std::vector<int>> cpuSets;  // of the ranks named, where known
  for (const auto& u : t.utilisation) {
    if (crowded.count(u.rank) || u.runDelayPctMean.value_or(0) < kRunDelayPct ||
        u.throttledPctMean.value_or(0) >= kThrottledPct || !competitors(u).empty() || !ownThreadsCompete(t, u))
      continue;
    ranks.push_back(u.rank);
    delayLo = std::min(delayLo, *u.runDelayPctMean), delayHi = std::max(delayHi, *u.runDelayPctMean);
    threadsLo = std::min(threadsLo, u.busyThreadsMean.value_or(0));
    threadsHi = std::max(threadsHi, u.busyThreadsMean.value_or(0));
    cpuLo = std::min(cpuLo, u.cpuPctMean), cpuHi = std::max(cpuHi, u.cpuPctMean);
    cpuCounts.insert(cpuCount(u));
    if (u.cpus) cpuSets.push_back(parseCpuList(*u.cpus));
  }
  if (ranks.empty()) return;
  bool shared = false;  // two of the ranks may run on the same CPUs
  for (size_t i = 0; i < cpuSets.size(); ++i)
    for (size_t j = i + 1; j < cpuSets.size(); ++j) shared = shared || overlaps(cpuSets[i], cpuSets[j]);
  const bool one = ranks.size() == 1;
  const std::string cpus = cpuCounts.size() == 1 ? fmt::format("{} CPU(s)", *cpuCounts.begin()) : "CPUs";
  const std::string threads = threadsHi > 0 ? fmt::format("{} busy threads on {}", range(threadsLo, threadsHi), cpus)
                                            : fmt::format("{} % CPU on {}", range(cpuLo, cpuHi), cpus);
  std::string set;  // the thread counts the ranks were started with
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    if (auto it = run.environment.find(name); it != run.environment.end())
      set += fmt::format("{}{}={}", set.empty() ? "" : ", ", name, it->second);
  add(out, FindingKind::kThreadsOversubscribed, Severity::kWarning, ranks,
      fmt::format("{} {} ran {}{}, and {} busiest thread waited for a CPU {} % of the time with nothing outside the "
                  "job on {} CPUs: {} own threads compete for them",
                  one ? "rank" : "ranks", rankList(ranks), threads, one ? "" : " each", one ? "its" : "each one's",
                  range(delayLo, delayHi), one ? "its" : "their", one ? "its" : "their") +
          (set.empty() ? "" : fmt::format(" (the ranks were started with {})", set)) +
          (shared ? std::string(", and the ranks share those CPUs: the job runs more threads than they have cores")
                  : std::string()),
      "no more busy threads per rank than cores: OMP_NUM_THREADS / torch.set_num_threads(cores per rank), more cores "
      "per rank (taskset; mpirun --map-by slot:PE=N) so that communication threads do not wait for the compute",
      Confidence::kMedium, "top -H -p PID of the rank while it runs: its threads, each with its CPU share");
}

void stalls(const RunData&, const TimingAnalysis& t, Findings& out) {
  if (t.stalls.size() < kStallMinCount || t.runMs <= 0 || t.stallExcessMs < kStallMinShare * t.runMs) return;
  std::map<int, size_t> byRank;
  double lo = 1e300, hi = 0;
  for (const auto& s : t.stalls) {
    ++byRank[s.rank];
    lo = std::min(lo, s.stepMs / t.stepMsMedian);
    hi = std::max(hi, s.stepMs / t.stepMsMedian);
  }
  const auto top = std::max_element(byRank.begin(), byRank.end(), [](auto& a, auto& b) { return a.second < b.second; });
  const int rank = top->first;
  std::map<Phase, size_t> phases;
  size_t stopped = 0;
  for (const auto& s : t.stalls)
    if (s.rank == rank) ++phases[s.phase], stopped += s.stopped;
  const Phase phase =
      std::max_element(phases.begin(), phases.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  const double share = static_cast<double>(top->second) / static_cast<double>(t.stalls.size());
  const double runShare = t.stallExcessMs / t.runMs;
  const RankUtilisation* u = utilisationOf(t, rank);
  const bool contended =
      u && (u->runDelayPctMean.value_or(0) >= kRunDelayPct || u->throttledPctMean.value_or(0) >= kThrottledPct);
  std::string evidence = fmt::format(
      "{} steps stalled ({}× the {:.0f} ms median; {:.1f} s beyond it in all, {} of the run's time): in {} of them the "
      "others waited for rank {}, {}",
      t.stalls.size(), range(lo, hi), t.stepMsMedian, t.stallExcessMs / 1e3, percent(runShare, 0), top->second, rank,
      phase == Phase::kCommWait ? std::string("which was held up inside the gradient allreduce itself")
                                : fmt::format("which spent the time in {}", phaseName(phase)));
  if (stopped > 0) evidence += fmt::format("; its process was seen stopped (state T) during {} of them", stopped);
  const std::string fix =
      stopped > 0 ? fmt::format(
                        "find what stops rank {}'s process: a SIGSTOP from a script or a job scheduler's "
                        "suspend, a debugger, or a shell's job control",
                        rank)
      : contended ? fmt::format("rank {} is short of CPU (see cpu_contention): give it a core of its own", rank)
                  : fmt::format(
                        "look at what else happens on rank {}'s host at those steps (trace.json shows when): "
                        "checkpoint or log writes, swapping, other jobs, garbage collection",
                        rank);
  add(out, FindingKind::kStalls, runShare >= kStallWarnShare ? Severity::kWarning : Severity::kInfo,
      share >= 0.6 ? std::vector<int>{rank} : std::vector<int>{}, evidence, fix,
      share >= 0.8 && (stopped > 0 || contended) ? Confidence::kHigh
      : share >= 0.6                             ? Confidence::kMedium
                                                 : Confidence::kLow,
      stopped > 0 ? fmt::format("ps -o pid,stat,wchan -p PID of rank {} while it runs: T means stopped", rank)
                  : fmt::format("trace.json at step {} (ui.perfetto.dev): rank {}'s {} against the others' comm_wait",
                                t.stalls.front().step, rank, phaseName(phase)));
}

void gpuThrottled(const RunData&, const TimingAnalysis& t, Findings& out) {
  static const std::set<std::string> kLimits = {"sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
                                                "hw_power_brake"};
  for (const auto& u : t.utilisation) {
    size_t limited = 0;
    std::string reasons;
    for (const auto& [reason, n] : u.gpuThrottle)
      if (kLimits.count(reason)) limited = std::max(limited, n), reasons += (reasons.empty() ? "" : ", ") + reason;
    if (u.samples == 0 || static_cast<double>(limited) < kThrottleSampleShare * static_cast<double>(u.samples))
      continue;
    const bool slow =
        !u.gpuSmClockMhzMean || !u.gpuSmClockMaxMhz || *u.gpuSmClockMhzMean < kThrottleClockShare * *u.gpuSmClockMaxMhz;
    if (!slow) continue;
    const bool thermal = reasons.find("thermal") != std::string::npos;
    add(out, FindingKind::kGpuThrottled, Severity::kWarning, {u.rank},
        fmt::format(
            "rank {}'s GPU had its clocks limited ({}) in {} of the samples{}", u.rank, reasons,
            percent(static_cast<double>(limited) / static_cast<double>(u.samples), 0),
            u.gpuSmClockMhzMean && u.gpuSmClockMaxMhz
                ? fmt::format(": SM clock {:.0f} of {:.0f} MHz on average", *u.gpuSmClockMhzMean, *u.gpuSmClockMaxMhz)
                : ""),
        thermal
            ? "the GPU is too hot: check cooling and airflow, or ask the cloud provider to replace the host"
            : "the GPU is at its power limit: raise it (nvidia-smi -pl) where allowed, or check the instance's power "
              "budget; a hw_slowdown that persists is a hardware fault to report",
        Confidence::kHigh, "nvidia-smi -q -d PERFORMANCE,CLOCK on its host");
  }
}

// GPUs idle while their rank waits, and "fake busy" GPUs (../shared/gpu-guide.md): NVML's
// GPU-Util counts any running kernel, and NCCL's kernels run while they wait for the network.
void gpuUtilisation(const RunData&, const TimingAnalysis& t, Findings& out) {
  for (const auto& u : t.utilisation) {
    if (!u.gpuUtilPctMean) continue;
    const RankTiming* rank = timingOf(t, u.rank);
    if (!rank || rank->stepMsMedian <= 0) continue;
    const double wait = rank->phaseMsMedian[Phase::kCommWait] / rank->stepMsMedian;
    const double data = rank->phaseMsMedian[Phase::kData] / rank->stepMsMedian;
    if (*u.gpuUtilPctMean < kGpuIdleUtilPct && wait + data >= kGpuIdleWaitShare)
      add(out, FindingKind::kGpuIdle, Severity::kWarning, {u.rank},
          fmt::format("rank {}'s GPU was busy {:.0f} % of the time on average while the rank spent {} of each step "
                      "waiting ({} on communication, {} on data)",
                      u.rank, *u.gpuUtilPctMean, percent(wait + data, 0), percent(wait, 0), percent(data, 0)),
          data >= wait ? "feed the GPU: more data-loader workers, pinned memory, prefetching, faster storage"
                       : "hide communication: larger batches, gradient bucketing that overlaps backward, NVLink/RDMA",
          Confidence::kMedium, "nvidia-smi dmon -s u on its host while it runs");
    else if (*u.gpuUtilPctMean >= kFakeBusyUtilPct && wait >= kFakeBusyWaitShare)
      add(out, FindingKind::kGpuFakeBusy, Severity::kWarning, {u.rank},
          fmt::format("rank {}'s GPU shows {:.0f} % utilisation, yet {} of each step is spent waiting for "
                      "communication: NCCL's kernels count as busy while they wait",
                      u.rank, *u.gpuUtilPctMean, percent(wait, 0)),
          "do not trust GPU-Util alone; reduce the exposed communication (see comm_bound) or find the rank the others "
          "wait for",
          Confidence::kMedium, "nsys profile: NCCL kernels that wait show as long ncclKernel spans");
  }
}

}  // namespace ddp::profiler::rules
