#pragma once
// Lost-time accounting (docs/diagnosis.md, "Where the time went"): every rank's every analysed
// step split into parts that add up to the step, and the run's time lost against an ideal step
// (balanced compute, no data wait, no waiting for a CPU, the transfer the link allows), split by
// cause. Pure functions over a loaded run; the diagnosis ranks its findings by the loss each
// explains.

#include "ddp/profiler/run.hpp"
#include "ddp/profiler/timing/links.hpp"

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::profiler {

// The parts of a rank's step. compute + cpu_wait is what the rank's own phases took (forward,
// backward, optimizer and the untimed rest of the step); data, transfer and peer_wait are waits.
enum class StepPart { kCompute, kCpuWait, kData, kTransfer, kPeerWait };
inline constexpr std::array<StepPart, 5> kStepParts = {StepPart::kCompute, StepPart::kCpuWait, StepPart::kData,
                                                       StepPart::kTransfer, StepPart::kPeerWait};
std::string_view stepPartName(StepPart part);  // "compute", "cpu_wait", "data", "transfer", "peer_wait"

template <typename T>
struct PartArray {
  std::array<T, kStepParts.size()> values{};
  T& operator[](StepPart p) { return values[static_cast<size_t>(p)]; }
  const T& operator[](StepPart p) const { return values[static_cast<size_t>(p)]; }
};

// How the waits for late peers are spread over the ranks that made them wait.
enum class LatePattern {
  kNone,        // no waiting for peers worth naming
  kPersistent,  // one rank is late in most steps and holds most of the wait
  kBursts,      // most of the wait is in a few steps (stalls)
  kRotating,    // the late rank changes from step to step: no rank is slow on average
};
std::string_view latePatternName(LatePattern p);  // "none", "persistent", "bursts", "rotating"

// One rank's part in the run, summed over the analysed steps.
struct RankAccount {
  int rank = -1;
  PartArray<double> ms;  // its own step time by part
  double stepMs = 0;     // sum of its step times (= the sum of ms)
  // As the late rank: the steps it arrived last in, and the others' peer wait it caused (ms of the
  // run: the mean over ranks of their wait for it, per step), split by the phase of its step that
  // ran longer than the others' (PhaseArray over data, forward, backward, comm_wait (unused),
  // optimizer; the untimed rest and the CPU wait are counted apart).
  size_t lateSteps = 0;
  double causedPeerWaitMs = 0;
  PhaseArray<double> causedByPhaseMs;
  double causedByCpuWaitMs = 0, causedByOtherMs = 0;
  // The first bucket, in launch order, at which it was behind the others by half its final lag or
  // more, over its late steps (bucket -> steps); empty without bucket records.
  std::map<int, size_t> lateAtBucket;
};

// The step's input size against its compute, over every rank and step, when the records say how
// large each step's inputs were (input_elems) and the size varies.
struct InputWork {
  double sizeCv = 0;       // coefficient of variation of input_elems over ranks and steps
  double correlation = 0;  // Pearson's r of input_elems against compute (forward + backward)
  size_t points = 0;
};

struct LostTime {
  size_t steps = 0;
  double measuredMs = 0;                           // the run: per step, the mean of the ranks' step times, summed
  double idealMs = 0;                              // the ideal steps summed
  PartArray<double> lostMs;                        // measured - ideal by part (compute's entry: 0 by construction)
  PartArray<double> lostInStallsMs;                // of lostMs, in the stalled steps (the stalls finding's)
  double idealComputeMs = 0, idealTransferMs = 0;  // the ideal's two parts
  std::optional<double> linkBusbwGbps;             // the bandwidth the ideal transfer is taken at
  std::string linkSource;                          // where that figure came from
  // The largest gap between a rank's parts and its step, as a share of the step, over ranks and
  // steps (0 by construction; a test holds the accounting to it).
  double worstSumError = 0;
  std::vector<RankAccount> ranks;  // by rank
  LatePattern pattern = LatePattern::kNone;
  int lateRank = -1;        // kPersistent: the rank
  double topLateShare = 0;  // the share of the peer wait caused by the rank that caused most
  double burstShare = 0;    // the share of the peer wait in the tenth of steps with most of it
  std::optional<InputWork> inputWork;
  // Per rank (in `ranks` order), per step of TimingAnalysis::matrixSteps (at most
  // kMaxMatrixSteps, evenly spaced), as TimingAnalysis::stepMatrix: its waits (data + CPU +
  // transfer + peer) and its compute.
  std::vector<std::vector<double>> waitMatrix, computeMatrix;

  double lostTotalMs() const;
  double share(double ms) const { return measuredMs > 0 ? ms / measuredMs : 0; }
};

// The run's time below this share of it lost: "healthy" may be said (docs/diagnosis.md).
inline constexpr double kHealthyLossShare = 0.15;

// The records of one step, by rank.
using StepRecords = std::map<int, const StepRecord*>;
// steps: the analysed steps' records (every rank in each); matrixSteps: the steps to keep for the
// heat map; stalled: the steps the timing analysis found stalled; slow: the slow links between
// hosts, if any (the fastest link is then what the network allows).
LostTime accountLostTime(const RunData& run, const std::vector<StepRecords>& steps,
                         const std::vector<int64_t>& matrixSteps, const std::set<int64_t>& stalled = {},
                         const std::optional<SlowLinks>& slow = std::nullopt);

}  // namespace ddp::profiler
