#pragma once
// One utilisation sample of a profiled run (docs/launcher.md, "Utilisation"): a line of
// util/rank-NNNNN.jsonl (RunLayout::utilisation), appended by ddprun's worker every interval,
// read by the profiler. Besides the rank's own use, it holds the evidence the diagnosis needs to
// tell contention and stalls apart from slow communication: how long the rank waited for a CPU,
// whether a CPU quota throttled it or it was stopped, what else ran on the host, and the GPU's
// clocks and throttle reasons.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

// A process outside the job that used CPU during the interval.
struct OtherProcess {
  int pid = 0;
  std::string name;   // its comm
  double cpuPct = 0;  // 100 = one core
  std::string cpus;   // the CPUs it may run on, "0-3,8"
};

// What the rank sent over one network link in the interval (its TCP connections to one peer
// address, from one local address, added up): the bytes the peer acknowledged and the time its
// connections were busy sending, less the time the receiver's window held them back. Their
// ratio is what the link delivered while it was in use; loopback and the host's own address are
// left out, and RDMA transports (NCCL on IB or eRDMA) show none.
struct LinkSample {
  std::string from, to;  // addresses: the rank's own, the peer's
  double sentMib = 0;
  double sendingMs = 0;
};

struct UtilSample {
  int rank = 0;
  int64_t tUnixUs = 0;
  double cpuPct = 0;  // CPU use of the rank's process group; 100 = one core
  double rssMib = 0;  // its resident memory
  int processes = 0;  // processes in the group
  // The rank's scheduling (absent where /proc does not say).
  std::optional<double> runDelayPct;      // its longest-waiting thread's time on a run queue, % of the interval
  std::optional<double> busiestDelayPct;  // the run-queue wait of its thread that used the most CPU, % of the interval
  std::optional<double> throttledPct;     // time its cgroup's CPU quota held it back, % of the interval
  std::optional<double> cpuQuota;         // that quota, in cores
  std::optional<double> preemptedPerS;    // involuntary context switches of its threads per second
  std::optional<int> busyThreads;         // its threads that used ≥ 10 % of a CPU in the interval
  std::optional<std::string> cpus;        // the CPUs its program may run on (affinity), "0-3,8"
  bool stopped = false;                   // a process of the rank was stopped (state T) when sampled
  // The rank's helper processes: the processes of its group other than the program itself (the
  // DataLoader's workers, subprocesses), their CPU use in the interval (100 = one core) and how
  // many were in uninterruptible I/O (state D) when sampled, and how long they waited for a CPU;
  // absent without helpers.
  std::optional<int> helpers;
  std::optional<double> helpersCpuPct;
  std::optional<int> helpersInIo;
  std::optional<double> helpersDelayPct;  // their threads' run-queue wait per helper, % of the interval
  // The host.
  std::optional<int> hostCpus;           // CPUs online
  std::optional<double> hostBusyPct;     // non-idle share of all its CPUs in the interval
  std::optional<double> stealPct;        // time the hypervisor gave the CPUs to others
  std::optional<double> load1;           // 1-minute load average
  std::optional<int> runnable;           // tasks running or waiting for a CPU (loadavg)
  std::optional<double> cpuPressurePct;  // PSI "some" avg10 (/proc/pressure/cpu)
  std::vector<OtherProcess> others;      // the busiest processes outside the job (≥ 10 % CPU)
  std::vector<LinkSample> links;         // what the rank sent to each peer address
  // The GPU, where NVML answered.
  std::optional<unsigned> gpu;  // the NVML index of the rank's GPU
  std::optional<double> gpuUtilPct, gpuMemUtilPct, gpuMemUsedMib;
  std::optional<double> gpuSmClockMhz, gpuSmClockMaxMhz, gpuPowerW;
  std::vector<std::string> gpuThrottle;  // active clock limits: "sw_power_cap", "hw_slowdown", ...
};

// One line of JSON (no newline).
std::string formatUtilSample(const UtilSample& sample);
// ConfigError naming the field for a line that is not a sample.
UtilSample parseUtilSample(std::string_view line);

// CPU lists as taskset writes them: {0, 1, 2, 3, 8} <-> "0-3,8". parseCpuList throws ConfigError
// for anything else.
std::string formatCpuList(const std::vector<int>& cpus);
std::vector<int> parseCpuList(std::string_view text);

}  // namespace ddp
