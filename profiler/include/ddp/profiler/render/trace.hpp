#pragma once
// trace.json: the run's step timings as a Chrome Trace Event file for ui.perfetto.dev
// (docs/report-html.md): one process per rank, a lane of steps, a lane of step phases and one lane
// per gradient bucket's collective, with clocks of different hosts aligned.

#include "ddp/profiler/run.hpp"

#include <map>
#include <string>

namespace ddp::profiler {

// Per host, the microseconds to subtract from its timestamps to put them on the clock of the
// lowest rank's host. An allreduce cannot end on any rank before every rank has started it, so
// each gradient bucket of each step bounds the offset from both sides; the estimate is the middle
// of the tightest bounds (docs/report-html.md). Hosts come from the exit records; without them every
// rank is taken to share one clock.
std::map<std::string, double> estimateClockOffsets(const RunData& run);

// The Chrome Trace Event file, as text (a JSON object, ending in a newline).
std::string traceText(const RunData& run);

}  // namespace ddp::profiler
