#pragma once
// The per-rank step timings record (docs/timings.md): one JSON object per line in
// <run dir>/timings/rank-NNNNN.jsonl. Written by StepTimer, read by the profiler; any program
// may write the same lines.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::comm {

inline constexpr int kTimingsSchemaVersion = 1;

// The phases of a training step, in the order a step runs them.
enum class Phase { kData, kForward, kBackward, kCommWait, kOptimizer };
inline constexpr std::array<Phase, 5> kPhases = {Phase::kData, Phase::kForward, Phase::kBackward,
                                                 Phase::kCommWait, Phase::kOptimizer};
// The key in "phases_ms": data, forward, backward, comm_wait, optimizer.
std::string_view phaseName(Phase phase);

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
  double stepMs = 0;
  std::array<double, kPhases.size()> phasesMs{};  // indexed by Phase
  std::vector<CollectiveRecord> collectives;
  std::optional<double> loss;

  double& phaseMs(Phase phase) { return phasesMs[static_cast<size_t>(phase)]; }
  double phaseMs(Phase phase) const { return phasesMs[static_cast<size_t>(phase)]; }
};

// One line of JSON (no newline).
std::string formatStepRecord(const StepRecord& record);
// Parses one line; throws ConfigError saying which field is missing or malformed.
StepRecord parseStepRecord(std::string_view line);

// <runDir>/timings/rank-NNNNN.jsonl
std::string timingsPath(const std::string& runDir, int rank);
// The step timer's progress file beside a timings file: rank-NNNNN.jsonl -> rank-NNNNN.progress.
std::string progressPath(const std::string& timingsPath);

// Wall clock in microseconds since the Unix epoch.
int64_t unixMicros(std::chrono::system_clock::time_point t = std::chrono::system_clock::now());

}  // namespace ddp::comm
