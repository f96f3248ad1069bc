#pragma once
// Renderers of the run report and the scaling table: they only format (docs/profiler.md).

#include "ddp/profiler/diagnosis/findings.hpp"
#include "ddp/profiler/projection/projection.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace ddp::profiler {

struct Report {
  const RunData& run;
  const TimingAnalysis& timing;
  const std::vector<Finding>& findings;
  const ProjectionReport* projection = nullptr;  // `ddprof report --project-to`: a section of its own
};

// report.json: findings, scaling (this run's size), ranks, phases, steps, nccl (the facts), problems.
nlohmann::json reportJson(const Report& report);
std::string renderReportText(const Report& report);
std::string renderReportMarkdown(const Report& report);
// report.html: one self-contained page (inline CSS and SVG; docs/report-html.md).
std::string renderReportHtml(const Report& report);

// A run directory loaded, analysed and rendered; with write, report.txt, report.json, report.md,
// report.html and (with timings) trace.json are also written into it (atomically). Used by
// `ddprof report` and `ddprun --profile`.
struct RenderedReport {
  std::string text, json, markdown, html;
  std::vector<std::string> problems;  // what could not be read ("file:line: what")
  bool usable = false;                // timings, NCCL logs or exit records were found
};
// projectTo: targets to project the run onto (docs/projection.md); ConfigError for one that
// cannot be modelled or a run that cannot be projected.
RenderedReport reportRun(const std::string& dir, bool write, const std::vector<std::string>& projectTo = {});

nlohmann::json scalingJson(const Scaling& scaling);
std::string renderScalingText(const Scaling& scaling);
std::string renderScalingHtml(const Scaling& scaling);

}  // namespace ddp::profiler
