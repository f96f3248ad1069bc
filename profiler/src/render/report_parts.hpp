#pragma once
// The pieces every report format shows the same way (text, Markdown, HTML): the verdict, the
// summary lines, what was not measured, the per-rank table. They only format.

#include "ddp/profiler/render/report.hpp"

#include <string>
#include <vector>

namespace ddp::profiler::parts {

// "fix first: cpu_contention (rank 1), high confidence: ..." / "healthy: ..." / "not measured: ...".
std::string verdict(const Report& r);
// "31 % of the run is lost: 24 % waiting for late peers (rotating: no rank is slow on average), 5 %
// transfer, 2 % data" (the lost-time accounting, largest part first).
std::string lossSummary(const LostTime& l);
// "where the time went: ideal step 6.10 ms (compute 5.20, the transfer the link needs 0.90) ->
// measured 8.84 ms ..." with the late ranks; "" without analysed steps.
std::string accountingSummary(const LostTime& l);
// "2 ranks, 59 steps analysed (first skipped as warm-up); step 8.61 ms median, ..."
std::string stepSummary(const TimingAnalysis& t);
// "phases (mean share of a step): data 12.7 % forward ..."
std::string phaseSummary(const TimingAnalysis& t);
// "communication: 1.6 ms per step; exposed 2.6 % of the step: the transfer 1.0 %, waiting for later ranks 1.6 %; ..."
std::string commSummary(const TimingAnalysis& t);
// "stalls: 8 steps took 3.4–9.1× the median (steps 12, 30, ...)"; "" without stalls.
// The links between hosts that carried enough to measure; "" when none did (one host, RDMA).
std::string linkSummary(const TimingAnalysis& t);
std::string stallSummary(const TimingAnalysis& t);
// Where the timings came from, per source ("timings: ddprun's automatic PyTorch instrumentation,
// torch 1.13.0 ..., cpu on ranks 0-1"), then what the sources noted.
std::vector<std::string> sourceLines(const Report& r);
// Why there is no timing analysis; "" when there is one.
std::string notMeasured(const Report& r);
// "(rank 1, 3)" or "".
std::string rankSuffix(const Finding& f);

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
// Per rank: steps, and the median step, compute, data, comm_wait and the part of it spent waiting
// for later ranks (medians: no phase figure exceeds its rank's step figure), the mean time with a
// collective in flight, the share of steps it was slowest in, and its stalls.
Table rankTable(const TimingAnalysis& t);

}  // namespace ddp::profiler::parts
