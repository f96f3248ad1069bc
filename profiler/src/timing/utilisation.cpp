// The utilisation samples of a profiled run summarised per rank (docs/profiler.md): CPU, memory,
// scheduling (run-queue delay, quota throttling, preemption, stops), the host, the busiest other
// processes, and the GPU.
#include "ddp/profiler/timing/analysis.hpp"

#include <algorithm>

namespace ddp::profiler {
namespace {

// The mean of the values a sample has for a field, if any has one.
template <typename Get>
std::optional<double> meanOf(const std::vector<UtilSample>& samples, Get get) {
  double sum = 0;
  size_t n = 0;
  for (const auto& s : samples)
    if (const std::optional<double> v = get(s)) sum += *v, ++n;
  return n ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
}

// Each outside process once, at the highest CPU use it was seen with; the busiest first.
std::vector<OtherProcess> busiestOthers(const std::vector<UtilSample>& samples) {
  std::map<std::pair<int, std::string>, OtherProcess> byProcess;
  for (const auto& s : samples)
    for (const auto& o : s.others) {
      auto& seen = byProcess[{o.pid, o.name}];
      if (o.cpuPct > seen.cpuPct) seen = o;
    }
  std::vector<OtherProcess> out;
  for (auto& [key, o] : byProcess) out.push_back(std::move(o));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.cpuPct > b.cpuPct; });
  if (out.size() > 5) out.resize(5);
  return out;
}

// Each (from, to) address pair's links over the samples, added up.
std::vector<LinkSample> addedLinks(const std::vector<UtilSample>& samples) {
  std::map<std::pair<std::string, std::string>, LinkSample> byPair;
  for (const auto& s : samples)
    for (const auto& l : s.links) {
      auto& sum = byPair.try_emplace({l.from, l.to}, LinkSample{l.from, l.to, 0, 0}).first->second;
      sum.sentMib += l.sentMib;
      sum.sendingMs += l.sendingMs;
    }
  std::vector<LinkSample> out;
  for (auto& [key, l] : byPair) out.push_back(std::move(l));
  return out;
}

void summariseScheduling(const std::vector<UtilSample>& samples, RankUtilisation& u) {
  u.runDelayPctMean = meanOf(samples, [](const UtilSample& s) { return s.runDelayPct; });
  u.throttledPctMean = meanOf(samples, [](const UtilSample& s) { return s.throttledPct; });
  u.preemptedPerSMean = meanOf(samples, [](const UtilSample& s) { return s.preemptedPerS; });
  u.busyThreadsMean = meanOf(samples, [](const UtilSample& s) {
    return s.busyThreads ? std::optional<double>(*s.busyThreads) : std::nullopt;
  });
  u.hostBusyPctMean = meanOf(samples, [](const UtilSample& s) { return s.hostBusyPct; });
  u.helpersMean =
      meanOf(samples, [](const UtilSample& s) { return s.helpers ? std::optional<double>(*s.helpers) : std::nullopt; });
  u.helpersCpuPctMean = meanOf(samples, [](const UtilSample& s) { return s.helpersCpuPct; });
  u.helpersDelayPctMean = meanOf(samples, [](const UtilSample& s) { return s.helpersDelayPct; });
  u.helpersInIoMean = meanOf(samples, [](const UtilSample& s) {
    return s.helpersInIo ? std::optional<double>(*s.helpersInIo) : std::nullopt;
  });
  u.stealPctMean = meanOf(samples, [](const UtilSample& s) { return s.stealPct; });
  u.load1Mean = meanOf(samples, [](const UtilSample& s) { return s.load1; });
  for (const auto& s : samples) {
    if (s.cpuQuota) u.cpuQuota = s.cpuQuota;
    if (s.cpus) u.cpus = s.cpus;
    if (s.hostCpus) u.hostCpus = s.hostCpus;
    u.stoppedSamples += s.stopped;
  }
  u.others = busiestOthers(samples);
  u.links = addedLinks(samples);
}

void summariseGpu(const std::vector<UtilSample>& samples, RankUtilisation& u) {
  u.gpuUtilPctMean = meanOf(samples, [](const UtilSample& s) { return s.gpuUtilPct; });
  u.gpuSmClockMhzMean = meanOf(samples, [](const UtilSample& s) { return s.gpuSmClockMhz; });
  for (const auto& s : samples) {
    if (s.gpuMemUsedMib) u.gpuMemUsedMibMax = std::max(u.gpuMemUsedMibMax.value_or(0.0), *s.gpuMemUsedMib);
    if (s.gpuSmClockMaxMhz) u.gpuSmClockMaxMhz = s.gpuSmClockMaxMhz;
    for (const auto& reason : s.gpuThrottle) ++u.gpuThrottle[reason];
  }
}

// The samples that cover the window by at least half of the time since the sample before them
// (the first sample's interval taken as long as the second's): start-up, warm-up and shutdown
// stay out of what the steps are compared with. All of them when none does (a run shorter than
// two sampling intervals).
std::vector<UtilSample> within(const std::vector<UtilSample>& samples, const std::optional<TimeWindow>& window) {
  if (!window || samples.size() < 2) return samples;
  std::vector<UtilSample> out;
  for (size_t i = 0; i < samples.size(); ++i) {
    const int64_t end = samples[i].tUnixUs;
    const int64_t start = i > 0 ? samples[i - 1].tUnixUs : end - (samples[1].tUnixUs - samples[0].tUnixUs);
    const int64_t overlap = std::min(end, window->toUs) - std::max(start, window->fromUs);
    if (end > start && 2 * overlap >= end - start) out.push_back(samples[i]);
  }
  return out.empty() ? samples : out;
}

}  // namespace

std::vector<RankUtilisation> analyseUtilisation(const RunData& run, const std::optional<TimeWindow>& window) {
  std::vector<RankUtilisation> out;
  for (const auto& [rank, all] : run.utilisation) {
    const auto samples = within(all, window);
    RankUtilisation u;
    u.rank = rank;
    u.samples = samples.size();
    for (const auto& s : samples) {
      u.cpuPctMean += s.cpuPct / static_cast<double>(samples.size());
      u.cpuPctMax = std::max(u.cpuPctMax, s.cpuPct);
      u.rssMibMax = std::max(u.rssMibMax, s.rssMib);
    }
    summariseScheduling(samples, u);
    summariseGpu(samples, u);
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<HostLink> analyseLinks(const RunData& run, const std::vector<RankUtilisation>& utilisation) {
  std::map<int, std::string> hostOfRank;
  for (const auto& e : run.exits)
    if (!e.host.empty()) hostOfRank[e.rank] = e.host;
  std::map<std::string, std::string> hostOfAddress;  // a rank's own addresses are its host's
  for (const auto& u : utilisation)
    if (auto h = hostOfRank.find(u.rank); h != hostOfRank.end())
      for (const auto& l : u.links) hostOfAddress.emplace(l.from, h->second);
  auto hostOf = [&](const std::string& address) {
    auto h = hostOfAddress.find(address);
    return h == hostOfAddress.end() ? address : h->second;
  };
  std::map<std::pair<std::string, std::string>, HostLink> byHosts;
  for (const auto& u : utilisation)
    for (const auto& l : u.links) {
      const std::string from = hostOf(l.from), to = hostOf(l.to);
      if (from == to) continue;
      auto& link = byHosts[{from, to}];
      link.from = from;
      link.to = to;
      link.sentMib += l.sentMib;
      link.sendingMs += l.sendingMs;
    }
  std::vector<HostLink> out;
  for (auto& [key, link] : byHosts) out.push_back(std::move(link));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.sentMib > b.sentMib; });
  return out;
}

}  // namespace ddp::profiler
