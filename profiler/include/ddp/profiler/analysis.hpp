#pragma once
// Analyses of a loaded run (pure functions): timing statistics, findings, scaling
// (docs/profiler.md).

#include "ddp/profiler/run.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ddp::profiler {

struct RankTiming {
  int rank = -1;
  size_t steps = 0;
  double stepMsMedian = 0, stepMsP95 = 0;
  double computeMsMedian = 0;      // step minus exposed comm wait
  PhaseArray<double> phaseMsMean;  // mean per step
  double commMsMean = 0;           // all of the step's collectives, hidden or not
  int64_t samplesPerStep = 0;
  double slowestShare = 0;  // share of steps in which this rank computed longest
};

struct Straggler {
  int rank = -1;
  double slowestShare = 0;    // of the analysed steps
  double extraComputeMs = 0;  // its median compute minus the others' median
  double othersWaitMs = 0;    // the others' median comm wait minus its own
};

// Per rank, the utilisation samples of a profiled run summarised.
struct RankUtilisation {
  int rank = -1;
  size_t samples = 0;
  double cpuPctMean = 0, cpuPctMax = 0, rssMibMax = 0;
  std::optional<double> gpuUtilPctMean, gpuMemUsedMibMax;  // where NVML answered
};
std::vector<RankUtilisation> analyseUtilisation(const RunData& run);

struct TimingAnalysis {
  std::vector<RankTiming> ranks;
  size_t stepsAnalysed = 0;                // steps present on every rank (the first one skipped as warm-up
  bool warmupSkipped = false;              //   when there are more than 3)
  double stepMsMedian = 0, stepMsP95 = 0;  // per step, the slowest rank's
  double samplesPerSecond = 0;             // global samples per step / median step
  int64_t globalSamplesPerStep = 0;
  PhaseArray<double> phaseShare;                         // mean share of the step, over ranks and steps
  double exposedCommShare = 0;                           // comm_wait / step
  double commMsMean = 0;                                 // collectives per step, hidden or not
  std::optional<double> overlapFraction;                 // 1 - exposed / total communication
  double imbalanceRun = 1;                               // max/mean of the ranks' median compute
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
  std::vector<RankUtilisation> utilisation;  // analyseUtilisation(run), for the rules and renderers
};

TimingAnalysis analyseTimings(const RunData& run);

enum class Severity { kInfo, kWarning, kCritical };
std::string_view severityName(Severity s);

// What a finding is about (docs/profiler.md, "Findings").
enum class FindingKind {
  kRankFailed,      // a rank failed on its own (the launcher's culprit first)
  kRanksStopped,    // ranks the launcher stopped after another failed: collateral
  kRestart,         // what a restart of the job redid
  kNcclError,       // NCCL WARN lines and failures
  kSocketFallback,  // NCCL on TCP sockets between hosts (or with IB devices present)
  kP2pDisabled,     // GPUs on one host talk through host memory
  kNoGdr,           // network edges without GPUDirect RDMA
  kInitSlow,        // NCCL communicator init took long
  kMissingRanks,    // ranks that wrote no timings
  kGpuIdle,         // a GPU idle while its rank waits
  kGpuFakeBusy,     // GPU-Util high while the rank waits in communication
  kCommBound,       // exposed gradient communication
  kStraggler,       // one rank the others wait for
  kLoadImbalance,   // compute differs between ranks
  kDataBound,       // loading data takes much of the step
  kSmallBatch,      // communication comparable to compute
};
std::string_view findingKindName(FindingKind kind);  // "rank_failed", "comm_bound", ...

struct Finding {
  FindingKind kind = FindingKind::kCommBound;
  Severity severity = Severity::kInfo;
  std::vector<int> ranks;
  std::string evidence;
  std::string fix;
};

// Rules over timings, NCCL facts and exit records; most severe first.
std::vector<Finding> diagnose(const RunData& run, const TimingAnalysis& timing);

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
