#pragma once
// The utilisation samples of a profiled run (docs/launcher.md, "Utilisation"): every interval the
// worker appends one UtilSample to <run>/util/rank-NNNNN.jsonl: the CPU use, memory and
// scheduling of its program's process group (run-queue delay, CPU-quota throttling, involuntary
// switches, affinity, stopped or not), the host's load, steal and CPU pressure, the busiest
// processes outside the job, and, where NVML is present, its GPU's utilisation, memory, clocks,
// power and throttle reasons. One pass over /proc per sample (procfs.hpp).

#include "ddp/common/util_sample.hpp"
#include "probe.hpp"
#include "procfs.hpp"
#include "tcp_links.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

namespace ddp::launcher {

// CPU ticks (user + system) and resident pages of every process in group pgid, from /proc.
struct GroupUsage {
  unsigned long long ticks = 0, rssPages = 0;
  int processes = 0;
  bool stopped = false;  // one of them was stopped (state T)
};
GroupUsage groupUsage(const std::vector<procfs::ProcStat>& processes, int pgid);

// This rank's GPU: its NVML index and its reader (probe::openGpu).
struct GpuSource {
  unsigned index = 0;
  probe::GpuReader read;
};

class UtilSampler {
 public:
  // gpu: this rank's GPU, if it has one. runDir: the run's directory, whose processes
  // (DDPRUN_RUN_DIR in their environment) are the job's, not "others". Throws ConfigError when
  // the file cannot be created.
  UtilSampler(const std::string& path, int rank, std::optional<GpuSource> gpu, std::chrono::milliseconds interval,
              const std::string& runDir = "");
  ~UtilSampler();
  UtilSampler(const UtilSampler&) = delete;
  UtilSampler& operator=(const UtilSampler&) = delete;
  // Appends a sample when the interval has passed since the last one.
  void poll(int pgid);

  // The counters a sample is the difference of (public for the sampler's helpers in sampler.cpp).
  struct Reading {
    std::chrono::steady_clock::time_point at;
    unsigned long long groupTicks = 0;
    procfs::ThreadTotals threads;
    std::optional<unsigned long long> throttledNs;
    procfs::HostTimes host;
    std::map<int, unsigned long long> ticksByPid;     // processes outside the group
    std::map<int, unsigned long long> helperTicks;    // the group's processes other than its leader
    std::map<int, unsigned long long> helperDelayNs;  // their threads' run-queue waits (thread id -> ns)
    int helpersInIo = 0;                              // helpers in state D when read
    std::map<uint64_t, tcp::Connection> connections;  // the group's TCP connections, by socket inode
  };

 private:
  std::vector<OtherProcess> others(const std::vector<procfs::ProcStat>& processes, int pgid, double seconds);
  void addGpu(UtilSample& sample) const;

  std::FILE* file_ = nullptr;
  int rank_;
  std::optional<GpuSource> gpu_;
  std::chrono::milliseconds interval_;
  std::string jobMark_;        // "DDPRUN_RUN_DIR=<run dir>"
  std::map<int, bool> isJob_;  // pid -> a process of this run
  std::chrono::steady_clock::time_point next_{};
  std::optional<Reading> last_;
};

}  // namespace ddp::launcher
