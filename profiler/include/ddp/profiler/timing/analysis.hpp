#pragma once
// Analyses of a loaded run (pure functions): timing statistics, utilisation, the lost-time
// accounting, scaling (docs/profiler.md). The findings drawn from them: diagnosis/findings.hpp.

#include "ddp/profiler/run.hpp"
#include "ddp/profiler/timing/accounting.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler {

struct RankTiming {
  int rank = -1;
  size_t steps = 0;
  double stepMsMedian = 0, stepMsP95 = 0;
  double computeMsMedian = 0;  // step minus exposed comm wait
  // The training thread's CPU time in those phases (cpu_ms), where every analysed step has it.
  std::optional<double> computeCpuMsMedian;
  PhaseArray<double> phaseMsMean;    // mean per step (what the phase bars add up)
  PhaseArray<double> phaseMsMedian;  // median per step: never above stepMsMedian (the tables)
  double commMsMean = 0;             // all of the step's collectives, hidden or not
  double peerWaitMsMedian = 0;       // of its comm_wait, the part spent waiting for a later rank
  int64_t samplesPerStep = 0;
  double slowestShare = 0;  // share of steps in which this rank computed longest
  size_t stalls = 0;        // stalled steps in which the others waited for this rank
};

struct Straggler {
  int rank = -1;
  double slowestShare = 0;    // of the analysed steps
  double extraComputeMs = 0;  // its median compute minus the others' median
  double othersWaitMs = 0;    // median per step of the others' comm_wait beyond its own
};

// A step far slower than the median (kStallFactor x, and kStallMinMs more): the rank the others
// waited for in it (the one that computed longest), and the phase of that rank that grew most.
struct Stall {
  int64_t step = 0;
  int64_t startUnixUs = 0;
  double stepMs = 0;
  int rank = -1;
  Phase phase = Phase::kForward;
  bool stopped = false;  // the rank's process was seen stopped (state T) during the step
};
inline constexpr double kStallFactor = 3.0;
inline constexpr double kStallMinMs = 50.0;

// Per rank, the utilisation samples of a profiled run summarised (means over the samples).
struct RankUtilisation {
  int rank = -1;
  size_t samples = 0;
  double cpuPctMean = 0, cpuPctMax = 0, rssMibMax = 0;
  std::optional<double> gpuUtilPctMean, gpuMemUsedMibMax;  // where NVML answered
  std::optional<double> runDelayPctMean;                   // waiting for a CPU (run queue), % of the time
  std::optional<double> throttledPctMean;                  // held back by its cgroup's CPU quota, % of the time
  std::optional<double> cpuQuota;                          // that quota, in cores
  std::optional<double> preemptedPerSMean;                 // involuntary context switches per second
  std::optional<double> busyThreadsMean;                   // threads using ≥ 10 % of a CPU
  std::optional<std::string> cpus;                         // the CPUs it may run on (the last sample's)
  size_t stoppedSamples = 0;                               // samples that saw it stopped (state T)
  std::optional<double> helpersMean, helpersCpuPctMean;    // its helper processes (DataLoader workers) and their CPU
  std::optional<double> helpersInIoMean;                   // of them, in uninterruptible I/O when sampled
  std::optional<double> helpersDelayPctMean;               // their run-queue wait per helper, % of the time
  std::optional<int> hostCpus;
  std::optional<double> hostBusyPctMean, stealPctMean, load1Mean;
  std::vector<OtherProcess> others;  // the busiest outside processes seen, each at its highest CPU
  std::optional<double> gpuSmClockMhzMean, gpuSmClockMaxMhz;
  std::map<std::string, size_t> gpuThrottle;  // reason -> samples that saw it
  std::vector<LinkSample> links;              // what it sent to each peer address, added up
};
// The run's time span the steps were analysed over (µs since the epoch).
struct TimeWindow {
  int64_t fromUs = 0, toUs = 0;
};
// Over the samples that fall mostly within `window`, where given (docs/profiler.md).
std::vector<RankUtilisation> analyseUtilisation(const RunData& run, const std::optional<TimeWindow>& window = {});

// The links between hosts (links.hpp): the ranks' links (analyseUtilisation's) by host.
std::vector<HostLink> analyseLinks(const RunData& run, const std::vector<RankUtilisation>& utilisation);

struct TimingAnalysis {
  std::vector<RankTiming> ranks;
  size_t stepsAnalysed = 0;                // steps present on every rank (the first one skipped as warm-up
  bool warmupSkipped = false;              //   when there are more than 3)
  double stepMsMedian = 0, stepMsP95 = 0;  // per step, the mean over the ranks
  double samplesPerSecond = 0;             // global samples per step / median step
  int64_t globalSamplesPerStep = 0;
  PhaseArray<double> phaseShare;  // mean share of the step, over ranks and steps
  double exposedCommShare = 0;    // comm_wait / step
  // comm_wait split (per step, over ranks): the part even the last rank to arrive waits is the
  // transfer itself; the rest of a rank's wait is for a later peer.
  double transferShare = 0;                  // mean per step of min over ranks of comm_wait / step
  double peerWaitShare = 0;                  // mean over ranks and steps of the rest / step
  std::optional<double> allreduceBusbwGbps;  // the gradient allreduces' bus bandwidth, transfer time only
  uint64_t allreduceBytesPerStep = 0;
  std::vector<Stall> stalls;              // in step order
  double runMs = 0, stallExcessMs = 0;    // wall time of the analysed steps; stalls' time beyond the median
  double commMsMean = 0;                  // collectives per step, hidden or not
  std::optional<double> overlapFraction;  // 1 - exposed / total communication
  double imbalanceRun = 1;                // max/mean of the ranks' median compute
  double imbalanceStepMedian = 1, imbalanceStepMax = 1;  // per step max/mean compute
  std::optional<Straggler> straggler;
  // Step time per rank per analysed step, for plots: at most kMaxMatrixSteps steps, evenly
  // spaced when there are more. stepMatrix[i][j] is rank ranks[i].rank at step matrixSteps[j].
  static constexpr size_t kMaxMatrixSteps = 1000;
  std::vector<int64_t> matrixSteps;
  std::vector<std::vector<double>> stepMatrix;
  std::vector<int> missingRanks;  // expected but without timings
  std::vector<int> shortRanks;    // fewer steps than the longest rank
  size_t maxSteps = 0;
  std::vector<RankUtilisation> utilisation;  // analyseUtilisation over the analysed steps, for the rules and renderers
  std::vector<HostLink> links;               // analyseLinks of them, the most sent first
  std::optional<SlowLinks> slowLinks;        // among them (links.hpp)
  LostTime lost;                             // where the time went (accounting.hpp)
};

TimingAnalysis analyseTimings(const RunData& run);

struct ScalingPoint {
  std::string dir;
  int worldSize = 0;
  double stepMs = 0, samplesPerSecond = 0;
  double idealStepMs = 0, idealSamplesPerSecond = 0;
  double efficiency = 0;  // (throughput / ranks) relative to the smallest run's
};

enum class ScalingKind {
  kWeak,    // the same batch per rank: the ideal step time stays constant
  kStrong,  // the same global batch: the ideal step time falls as 1/ranks
};
std::string_view scalingKindName(ScalingKind kind);  // "weak", "strong"

struct Scaling {
  ScalingKind kind = ScalingKind::kWeak;
  std::vector<ScalingPoint> points;  // by world size
};

// Why two runs are not the same job (another program, or another --model or --data), if they are not.
std::optional<std::string> notTheSameJob(const RunData& a, const RunData& b);

// Throws ConfigError with the reason when the runs are not the same job at different sizes.
Scaling analyseScaling(const std::vector<RunData>& runs);

}  // namespace ddp::profiler
