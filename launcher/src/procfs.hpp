#pragma once
// What /proc and /sys say about processes and the host, for the utilisation sampler: one pass
// over every process's stat line, a process's threads' scheduling (run-queue delay, involuntary
// switches), its affinity and its cgroup's CPU quota, and the host's CPU times, load and
// pressure. Every reader returns nothing (or zeros) where the kernel does not offer the file.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher::procfs {

// The whole of a small file (/proc and /sys files report no size), up to `limit` bytes; none when
// it cannot be opened.
std::optional<std::string> readSmallFile(const std::string& path, size_t limit = 1 << 16);

struct ProcStat {
  int pid = 0;
  std::string comm;
  char state = '?';
  long pgrp = 0;
  unsigned long long ticks = 0;       // user + system of the process itself
  unsigned long long childTicks = 0;  // of the children it waited for (a shell's command that ended)
  long rssPages = 0;
};
// Every process's /proc/PID/stat (processes that end during the pass are left out).
std::vector<ProcStat> scanProcesses();

// The process's threads (/proc/PID/task/*/schedstat, stat and status): each one's time spent
// waiting on a run queue and its CPU time, and their involuntary context switches summed.
struct ThreadTotals {
  std::map<int, unsigned long long> runDelayNs;  // thread id -> ns
  std::map<int, unsigned long long> ticks;       // thread id -> user + system
  unsigned long long involuntarySwitches = 0;
};
void addThreads(int pid, ThreadTotals& into);

// The CPUs a process may run on; empty when the kernel will not say.
std::vector<int> affinity(int pid);

// The CPU controller of the process's cgroup (v1 cpu,cpuacct or v2): how long a quota has held it
// back in all (cpu.stat throttled time) and the quota in cores; none where there is none.
struct CgroupCpu {
  std::optional<unsigned long long> throttledNs;
  std::optional<double> quotaCores;
};
CgroupCpu cgroupCpu(int pid);

// The host: /proc/stat's first line, /proc/loadavg, /proc/pressure/cpu.
struct HostTimes {
  unsigned long long total = 0, idle = 0, steal = 0;  // ticks over all CPUs
};
HostTimes hostTimes();
struct Load {
  double load1 = 0;
  int runnable = 0;
};
std::optional<Load> loadAverage();
std::optional<double> cpuPressureAvg10();
int onlineCpus();

// Whether the process's environment holds `entry` ("DDPRUN_RUN_DIR=/runs/x"): a process of the
// same run. False when the environment cannot be read (another user's process).
bool environmentHas(int pid, const std::string& entry);

}  // namespace ddp::launcher::procfs
