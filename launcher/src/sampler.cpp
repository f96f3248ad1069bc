#include "sampler.hpp"

#include "ddp/common/clock.hpp"
#include "ddp/common/environment.hpp"
#include "ddp/common/error.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

namespace ddp::launcher {
namespace {

constexpr double kOtherMinCpuPct = 10;  // an outside process is named from this CPU use on
constexpr size_t kMaxOthers = 3;

double round1(double x) { return std::round(x * 10) / 10; }

double ticksPerSecond() {
  static const double tps = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return tps;
}

// b - a of a counter that may have gone back (a thread ended and took its counts with it).
double growth(unsigned long long a, unsigned long long b) { return b > a ? static_cast<double>(b - a) : 0.0; }

using Counters = std::map<int, unsigned long long>;

// How much counter `key` grew to `now` since `before` (one new since counts from zero).
double grewBy(const Counters& before, int key, unsigned long long now) {
  auto was = before.find(key);
  return growth(was == before.end() ? 0 : was->second, now);
}

// The longest any one thread waited on a run queue between two readings (ns): a rank's work is
// held up when its busiest thread is, while its threads waiting for one another on a core of
// their own add up to nothing a core would fix. Threads that started since count from zero.
double longestWait(const procfs::ThreadTotals& before, const procfs::ThreadTotals& now) {
  double longest = 0;
  for (const auto& [tid, delay] : now.runDelayNs) longest = std::max(longest, grewBy(before.runDelayNs, tid, delay));
  return longest;
}

// The run-queue wait (ns) of the thread that used the most CPU between two readings: the training
// loop's, in a rank that computes on its own thread (its helpers' waits aside).
double busiestWait(const procfs::ThreadTotals& before, const procfs::ThreadTotals& now) {
  double most = -1, wait = 0;
  for (const auto& [tid, used] : now.ticks) {
    const double u = grewBy(before.ticks, tid, used);
    if (u <= most) continue;
    most = u;
    auto d = now.runDelayNs.find(tid);
    wait = d == now.runDelayNs.end() ? 0 : grewBy(before.runDelayNs, tid, d->second);
  }
  return wait;
}

// Threads that used at least a tenth of a CPU between two readings (of `ticks` CPU ticks).
int busyThreads(const procfs::ThreadTotals& before, const procfs::ThreadTotals& now, double ticks) {
  int busy = 0;
  for (const auto& [tid, used] : now.ticks) busy += grewBy(before.ticks, tid, used) >= 0.1 * ticks;
  return busy;
}

// How much the counters of `now` grew since `before`, added up (a key new since counts from zero).
double grown(const Counters& before, const Counters& now) {
  double sum = 0;
  for (const auto& [key, value] : now) sum += grewBy(before, key, value);
  return sum;
}

// A helper of the rank (its DataLoader worker, a subprocess): its threads count with the rank's,
// and apart, for the helpers' own figures.
void addHelper(const procfs::ProcStat& p, UtilSampler::Reading& r) {
  procfs::ThreadTotals helper;
  procfs::addThreads(p.pid, helper);
  r.threads.runDelayNs.insert(helper.runDelayNs.begin(), helper.runDelayNs.end());
  r.threads.ticks.insert(helper.ticks.begin(), helper.ticks.end());
  r.threads.involuntarySwitches += helper.involuntarySwitches;
  r.helperDelayNs.insert(helper.runDelayNs.begin(), helper.runDelayNs.end());
  r.helperTicks[p.pid] = p.ticks;
  r.helpersInIo += p.state == 'D';
}

// What the group's connections sent since the last reading, per (local, peer) address; a
// connection new since counts from zero, one that closed in between is lost with its counts.
std::vector<LinkSample> linkSamples(const std::map<uint64_t, tcp::Connection>& before,
                                    const std::map<uint64_t, tcp::Connection>& now) {
  std::map<std::pair<std::string, std::string>, LinkSample> byLink;
  const tcp::Connection zero;
  for (const auto& [inode, c] : now) {
    auto was = before.find(inode);
    const tcp::Connection& b = was == before.end() ? zero : was->second;
    const double sent = growth(b.bytesAcked, c.bytesAcked), sending = growth(b.sendingUs, c.sendingUs);
    if (sent <= 0) continue;
    auto& l = byLink[{c.local, c.peer}];
    l.from = c.local;
    l.to = c.peer;
    l.sentMib += sent / (1 << 20);
    l.sendingMs += sending / 1e3;
  }
  std::vector<LinkSample> out;
  for (auto& [key, l] : byLink) {
    l.sentMib = std::round(l.sentMib * 1e4) / 1e4;
    l.sendingMs = round1(l.sendingMs);
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace

GroupUsage groupUsage(const std::vector<procfs::ProcStat>& processes, int pgid) {
  GroupUsage usage;
  for (const auto& p : processes) {
    if (p.pgrp != pgid) continue;
    usage.ticks += p.ticks + p.childTicks;
    usage.rssPages += static_cast<unsigned long long>(std::max(0L, p.rssPages));
    usage.stopped = usage.stopped || p.state == 'T' || p.state == 't';
    ++usage.processes;
  }
  return usage;
}

UtilSampler::UtilSampler(const std::string& path, int rank, std::optional<GpuSource> gpu,
                         std::chrono::milliseconds interval, const std::string& runDir)
    : rank_(rank), gpu_(std::move(gpu)), interval_(interval) {
  if (!runDir.empty()) jobMark_ = fmt::format("{}={}", env::kRunDir, runDir);
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw ConfigError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
}

UtilSampler::~UtilSampler() {
  if (file_) std::fclose(file_);
}

// The busiest processes outside the job since the last sample (another rank of this run, or its
// data-loader workers, are the job's: DDPRUN_RUN_DIR in their environment).
std::vector<OtherProcess> UtilSampler::others(const std::vector<procfs::ProcStat>& processes, int pgid,
                                              double seconds) {
  std::vector<OtherProcess> out;
  std::map<int, bool> seen;
  for (const auto& p : processes) {
    if (p.pgrp == pgid || p.pid == ::getpid()) continue;
    auto before = last_->ticksByPid.find(p.pid);
    if (before == last_->ticksByPid.end()) continue;
    const double cpu = 100 * growth(before->second, p.ticks) / ticksPerSecond() / seconds;
    if (cpu < kOtherMinCpuPct) continue;
    auto known = isJob_.find(p.pid);
    const bool job =
        known != isJob_.end() ? known->second : !jobMark_.empty() && procfs::environmentHas(p.pid, jobMark_);
    seen[p.pid] = job;
    if (!job) out.push_back({p.pid, p.comm, round1(cpu), formatCpuList(procfs::affinity(p.pid))});
  }
  isJob_ = std::move(seen);  // only processes still busy stay cached
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.cpuPct > b.cpuPct; });
  if (out.size() > kMaxOthers) out.resize(kMaxOthers);
  return out;
}

void UtilSampler::addGpu(UtilSample& s) const {
  if (!gpu_ || !gpu_->read) return;
  auto g = gpu_->read();
  if (!g) return;
  s.gpu = gpu_->index;
  s.gpuUtilPct = g->gpuUtilPct;
  s.gpuMemUtilPct = g->memUtilPct;
  s.gpuMemUsedMib = static_cast<double>(g->memUsedMiB);
  s.gpuSmClockMhz = g->smClockMhz;
  s.gpuSmClockMaxMhz = g->smClockMaxMhz;
  s.gpuPowerW = g->powerW;
  s.gpuThrottle = g->throttleReasons;
}

void UtilSampler::poll(int pgid) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + interval_;
  const auto processes = procfs::scanProcesses();
  const auto group = groupUsage(processes, pgid);
  if (group.processes == 0) return;
  Reading r;
  r.at = now;
  r.groupTicks = group.ticks;
  std::vector<int> members;
  for (const auto& p : processes) {
    if (p.pgrp != pgid)
      r.ticksByPid[p.pid] = p.ticks;
    else if (p.pid == pgid)
      procfs::addThreads(p.pid, r.threads);
    else
      addHelper(p, r);
    if (p.pgrp == pgid) members.push_back(p.pid);
  }
  r.connections = tcp::connections(tcp::socketInodes(members));
  const auto cgroup = procfs::cgroupCpu(pgid);
  r.throttledNs = cgroup.throttledNs;
  r.host = procfs::hostTimes();
  if (!last_) {  // the first reading only sets the baseline
    last_ = std::move(r);
    return;
  }
  const double seconds = std::chrono::duration<double>(r.at - last_->at).count();
  if (seconds <= 0) return;
  static const double pageMiB = static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 20);
  UtilSample s;
  s.rank = rank_;
  s.tUnixUs = unixMicros();
  s.cpuPct = round1(100 * growth(last_->groupTicks, r.groupTicks) / ticksPerSecond() / seconds);
  s.rssMib = round1(static_cast<double>(group.rssPages) * pageMiB);
  s.processes = group.processes;
  s.stopped = group.stopped;
  if (!r.helperTicks.empty()) {
    const auto helpers = static_cast<double>(r.helperTicks.size());
    s.helpers = static_cast<int>(r.helperTicks.size());
    s.helpersCpuPct = round1(100 * grown(last_->helperTicks, r.helperTicks) / ticksPerSecond() / seconds);
    s.helpersInIo = r.helpersInIo;
    s.helpersDelayPct = round1(100 * grown(last_->helperDelayNs, r.helperDelayNs) / 1e9 / seconds / helpers);
  }
  s.runDelayPct = round1(100 * longestWait(last_->threads, r.threads) / 1e9 / seconds);
  s.busiestDelayPct = round1(100 * busiestWait(last_->threads, r.threads) / 1e9 / seconds);
  s.busyThreads = busyThreads(last_->threads, r.threads, ticksPerSecond() * seconds);
  s.preemptedPerS = round1(growth(last_->threads.involuntarySwitches, r.threads.involuntarySwitches) / seconds);
  if (r.throttledNs && last_->throttledNs)
    s.throttledPct = round1(100 * growth(*last_->throttledNs, *r.throttledNs) / 1e9 / seconds);
  s.cpuQuota = cgroup.quotaCores;
  if (auto cpus = procfs::affinity(pgid); !cpus.empty()) s.cpus = formatCpuList(cpus);
  s.hostCpus = procfs::onlineCpus();
  if (const double total = growth(last_->host.total, r.host.total); total > 0) {
    s.hostBusyPct = round1(100 * (1 - growth(last_->host.idle, r.host.idle) / total));
    s.stealPct = round1(100 * growth(last_->host.steal, r.host.steal) / total);
  }
  if (auto load = procfs::loadAverage()) {
    s.load1 = load->load1;
    s.runnable = load->runnable;
  }
  s.cpuPressurePct = procfs::cpuPressureAvg10();
  s.others = others(processes, pgid, seconds);
  s.links = linkSamples(last_->connections, r.connections);
  addGpu(s);
  last_ = std::move(r);
  const auto text = formatUtilSample(s) + "\n";
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace ddp::launcher
