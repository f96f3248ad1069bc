// The scaling renderers: JSON, text and an HTML chart against ideal (docs/profiler.md).
#include "ddp/common/text.hpp"
#include "ddp/profiler/render/report.hpp"
#include "render/html.hpp"

#include <fmt/format.h>

namespace ddp::profiler {

using nlohmann::json;

json scalingJson(const Scaling& s) {
  json points = json::array();
  for (const auto& p : s.points)
    points.push_back({{"run_dir", p.dir},
                      {"ranks", p.worldSize},
                      {"step_ms", p.stepMs},
                      {"samples_per_s", p.samplesPerSecond},
                      {"ideal_step_ms", p.idealStepMs},
                      {"ideal_samples_per_s", p.idealSamplesPerSecond},
                      {"efficiency", p.efficiency}});
  return {{"kind", scalingKindName(s.kind)}, {"points", points}};
}

std::string renderScalingText(const Scaling& s) {
  std::string out = fmt::format("{} scaling ({})\n", scalingKindName(s.kind),
                                s.kind == ScalingKind::kWeak ? "same batch per rank: ideal step time stays constant"
                                                             : "same global batch: ideal step time falls as 1/ranks");
  out += fmt::format("{:>6} {:>10} {:>10} {:>12} {:>12} {:>10}  {}\n", "ranks", "step_ms", "ideal_ms", "samples/s",
                     "ideal", "efficiency", "run");
  for (const auto& p : s.points)
    out += fmt::format("{:>6} {:>10.2f} {:>10.2f} {:>12.1f} {:>12.1f} {:>10}  {}\n", p.worldSize, p.stepMs,
                       p.idealStepMs, p.samplesPerSecond, p.idealSamplesPerSecond, percent(p.efficiency), p.dir);
  return out;
}

std::string renderScalingHtml(const Scaling& s) {
  html::Page page("ddprof scaling");
  page.heading(1, std::string(scalingKindName(s.kind)) + " scaling");
  std::vector<double> xs;
  html::Series measured{"measured", {}}, ideal{"ideal", {}};
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : s.points) {
    xs.push_back(p.worldSize);
    measured.values.push_back(p.samplesPerSecond);
    ideal.values.push_back(p.idealSamplesPerSecond);
    rows.push_back({std::to_string(p.worldSize), fmt::format("{:.2f}", p.stepMs), fmt::format("{:.2f}", p.idealStepMs),
                    fmt::format("{:.1f}", p.samplesPerSecond), fmt::format("{:.1f}", p.idealSamplesPerSecond),
                    percent(p.efficiency), p.dir});
  }
  page.raw(html::lineChart("Throughput against ideal", xs, {measured, ideal}, "ranks", "samples/s", false, {"ideal"}));
  page.table({"ranks", "step ms", "ideal ms", "samples/s", "ideal", "efficiency", "run"}, rows);
  return page.finish();
}

}  // namespace ddp::profiler
