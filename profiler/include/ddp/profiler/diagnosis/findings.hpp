#pragma once
// The diagnosis (docs/diagnosis.md): findings drawn from a run and its timing analysis, each with
// its evidence, fix, confidence, the check that would confirm it and the share of the run it
// explains, ordered so that the first is the cause to fix first.

#include "ddp/profiler/timing/analysis.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::profiler {

enum class Severity { kInfo, kWarning, kCritical };
std::string_view severityName(Severity s);

// How sure a finding is of its cause: high (the evidence names it), medium (consistent with it,
// one measure short), low (a suspicion worth checking).
enum class Confidence { kLow, kMedium, kHigh };
std::string_view confidenceName(Confidence c);

// What a finding is about (docs/profiler.md, "Findings").
enum class FindingKind {
  kRankFailed,             // a rank failed on its own (the launcher's culprit first)
  kRankHung,               // a rank the hang watchdog named (--timeout), with its stacks
  kHostLost,               // every rank of one host went silent at once: the host died or its link went down
  kRanksStopped,           // ranks the launcher stopped after another failed: collateral
  kRestart,                // what a restart of the job redid
  kNcclError,              // NCCL WARN lines and failures
  kSocketFallback,         // NCCL on TCP sockets between hosts (or with IB devices present)
  kP2pDisabled,            // GPUs on one host talk through host memory
  kNoGdr,                  // network edges without GPUDirect RDMA
  kInitSlow,               // NCCL communicator init took long
  kMissingRanks,           // ranks that wrote no timings
  kGpuIdle,                // a GPU idle while its rank waits
  kGpuFakeBusy,            // GPU-Util high while the rank waits in communication
  kCommBound,              // exposed gradient communication
  kStraggler,              // one rank the others wait for
  kLoadImbalance,          // compute differs between ranks
  kDataBound,              // loading data takes much of the step
  kSmallBatch,             // communication comparable to compute
  kCpuContention,          // a rank waits for a CPU: its cores or host oversubscribed, a CPU quota
  kStalls,                 // steps far above the median, and the rank that held them up
  kGpuThrottled,           // a GPU's clocks held down by power or thermal limits
  kThreadsOversubscribed,  // a rank's own threads more than its CPUs: they wait for one another
  kDataloaderStarved,      // data-bound, with the PyTorch DataLoader's settings that cause it
  kVariableWork,           // the ranks wait for one another in turn: each step's work differs between ranks
  kUnexplainedLoss,        // time lost (accounting.hpp) that no other finding explains
};
std::string_view findingKindName(FindingKind kind);  // "rank_failed", "comm_bound", ...
// A rank or host that failed, NCCL errors, ranks that wrote nothing: fixed before any loss.
bool isFailure(FindingKind kind);

struct Finding {
  FindingKind kind = FindingKind::kCommBound;
  Severity severity = Severity::kInfo;
  std::vector<int> ranks;
  std::string evidence;  // the numbers it rests on
  std::string fix;
  Confidence confidence = Confidence::kMedium;
  std::string confirm;  // one check or command that would confirm it
  // The share of the run's time it explains (what its fix would win back, from the lost-time
  // accounting); none for findings the accounting cannot measure (GPU, failures).
  std::optional<double> lostShare;
  std::vector<std::string> hosts;  // the hosts it names (a slow host's network)
};

// Rules over timings, utilisation samples, NCCL facts and exit records. Ordered so that the
// first is the cause to fix first: failures, then causes (contention, stalls, a throttled GPU,
// a straggler, data), then what they lead to (communication, batch size), then notes.
std::vector<Finding> diagnose(const RunData& run, const TimingAnalysis& timing);

}  // namespace ddp::profiler
