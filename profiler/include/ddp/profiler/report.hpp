#pragma once
// Renderers of the run report and the scaling table: they only format (docs/profiler.md).

#include "ddp/profiler/analysis.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace ddp::profiler {

struct Report {
  const RunData& run;
  const TimingAnalysis& timing;
  const std::vector<Finding>& findings;
};

// report.json: findings, scaling (this run's size), ranks, phases, steps, nccl (the facts), problems.
nlohmann::json reportJson(const Report& report);
std::string renderReportText(const Report& report);
std::string renderReportMarkdown(const Report& report);

nlohmann::json scalingJson(const Scaling& scaling);
std::string renderScalingText(const Scaling& scaling);

}  // namespace ddp::profiler
