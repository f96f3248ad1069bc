#pragma once
// Runs constructed with known answers for the diagnosis tests (test_diagnosis*.cpp): ranks in
// lockstep with a given compute per step, utilisation samples, the findings and their kinds.
#include "ddp/profiler/diagnosis/findings.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace ddp::profiler::constructed {

using ddp::Phase;
using ddp::StepRecord;
using ddp::UtilSample;

inline constexpr int64_t kStart = 1'000'000'000;

// Step s of rank r takes compute(r, s) ms; the others wait for the slowest in comm_wait, plus
// `transfer` ms that even the slowest waits; one gradient bucket of `bytes`.
inline RunData syncRun(int ranks, int steps, const std::function<double(int, int)>& compute, double transfer = 1,
                       uint64_t bytes = 1 << 20) {
  RunData run;
  run.dir = "constructed";
  run.worldSize = ranks;
  int64_t at = kStart;
  for (int s = 0; s < steps; ++s) {
    double slowest = 0;
    for (int r = 0; r < ranks; ++r) slowest = std::max(slowest, compute(r, s));
    for (int r = 0; r < ranks; ++r) {
      StepRecord rec;
      rec.rank = r;
      rec.worldSize = ranks;
      rec.step = s;
      rec.startUnixUs = at;
      rec.samples = 32;
      const double c = compute(r, s);
      rec.phasesMs[Phase::kData] = 0.1 * c;
      rec.phasesMs[Phase::kForward] = 0.3 * c;
      rec.phasesMs[Phase::kBackward] = 0.5 * c;
      rec.phasesMs[Phase::kOptimizer] = 0.1 * c;
      rec.phasesMs[Phase::kCommWait] = slowest - c + transfer;
      rec.stepMs = slowest + transfer;
      rec.collectives.push_back({ddp::CollectiveOp::kAllreduce, 0, bytes, at + static_cast<int64_t>(c * 900),
                                 slowest - c + transfer + 0.1 * c});
      run.timings[r].push_back(rec);
    }
    at += static_cast<int64_t>((slowest + transfer) * 1000);
  }
  return run;
}

// Samples every 500 ms over the run for rank r.
inline void sample(RunData& run, int rank, int count, const std::function<void(UtilSample&, int)>& fill) {
  for (int i = 0; i < count; ++i) {
    UtilSample u;
    u.rank = rank;
    u.tUnixUs = kStart + i * 500'000;
    u.cpuPct = 100;
    u.hostCpus = 2;
    fill(u, i);
    run.utilisation[rank].push_back(u);
  }
}

inline std::vector<Finding> findingsOf(const RunData& run) { return diagnose(run, analyseTimings(run)); }

// Ranks 0 and 1 each pinned to a core of their own, using all of it with 2 busy threads (compute
// and communication), their busiest thread waiting for the core `delayPct` of the time.
inline void twoThreadsOnOwnCore(RunData& run, double delayPct) {
  for (int r = 0; r < 2; ++r)
    sample(run, r, 10, [r, delayPct](UtilSample& u, int) {
      u.cpus = std::to_string(r);
      u.cpuPct = 99;
      u.runDelayPct = delayPct;
      u.busyThreads = 2;
    });
}

inline std::string kinds(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings) out += std::string(out.empty() ? "" : ",") + std::string(findingKindName(f.kind));
  return out;
}

}  // namespace ddp::profiler::constructed
