#pragma once
// The per-rank step record (docs/timings.md): one JSON object per line in
// <run dir>/timings/rank-NNNNN.jsonl (RunLayout::timings). Written by ddp::comm's StepTimer and
// by the Python step timer, read by the profiler and by ddprun's heartbeat; any program may
// write the same lines.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

inline constexpr int kTimingsSchemaVersion = 1;

// The phases of a training step, in the order a step runs them.
enum class Phase { kData, kForward, kBackward, kCommWait, kOptimizer };
inline constexpr std::array<Phase, 5> kPhases = {Phase::kData, Phase::kForward, Phase::kBackward, Phase::kCommWait,
                                                 Phase::kOptimizer};
// The key in "phases_ms": data, forward, backward, comm_wait, optimizer.
std::string_view phaseName(Phase phase);
std::optional<Phase> parsePhase(std::string_view name);

// One value per phase, indexed by Phase.
template <typename T>
struct PhaseArray {
  std::array<T, kPhases.size()> values{};
  T& operator[](Phase p) { return values[static_cast<size_t>(p)]; }
  const T& operator[](Phase p) const { return values[static_cast<size_t>(p)]; }
  void fill(const T& value) { values.fill(value); }
  auto begin() const { return values.begin(); }
  auto end() const { return values.end(); }
  bool operator==(const PhaseArray& other) const { return values == other.values; }
};

enum class CollectiveOp { kAllreduce, kBroadcast, kAllgather, kReduceScatter, kAlltoall, kBarrier };
// allreduce, broadcast, allgather, reduce_scatter, alltoall, barrier.
std::string_view collectiveOpName(CollectiveOp op);
std::optional<CollectiveOp> parseCollectiveOp(std::string_view name);

struct CollectiveRecord {
  CollectiveOp op = CollectiveOp::kAllreduce;
  int bucket = -1;  // the DDP bucket; -1 when the collective is not a gradient bucket's
  uint64_t bytes = 0;
  int64_t startUnixUs = 0;  // wall clock, microseconds since the Unix epoch
  double durationMs = 0;    // launch to completion
};

struct StepRecord {
  int rank = 0;
  int worldSize = 0;  // 0: not recorded
  int64_t step = 0;
  int64_t startUnixUs = 0;
  int64_t samples = 0;  // samples this rank processed in the step
  // Elements of the step's inputs (the first input tensor of each forward, all its dimensions):
  // where work per sample varies (sequence lengths), what the step's work was.
  std::optional<int64_t> inputElems;
  double stepMs = 0;
  PhaseArray<double> phasesMs;
  // CPU time of the thread that timed the phases (the training loop's), per phase: what a CPU
  // rank computed, apart from waits and from the time other processes had its core.
  std::optional<PhaseArray<double>> cpuMs;
  std::vector<CollectiveRecord> collectives;
  std::optional<double> loss;
};

// One line of JSON (no newline).
std::string formatStepRecord(const StepRecord& record);
// Parses one line; throws ConfigError saying which field is missing or malformed.
StepRecord parseStepRecord(std::string_view line);

// The progress file beside a timings file (RunLayout::progress, progressPathFor): "STEP PHASE"
// while a phase is under way, "STEP done" after the step; the step timer rewrites it in place,
// ddprun's heartbeat reads it.
struct StepProgress {
  int64_t step = -1;
  std::optional<Phase> phase;  // none: the step is done
  bool done() const { return !phase; }
};
std::string formatStepProgress(const StepProgress& progress);
// Trailing blanks and newlines are ignored; nullopt for anything else that is not one.
std::optional<StepProgress> parseStepProgress(std::string_view text);

}  // namespace ddp
