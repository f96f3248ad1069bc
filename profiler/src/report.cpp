#include "ddp/profiler/report.hpp"

#include "ddp/common/files.hpp"
#include "ddp/common/json_text.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/profiler/trace.hpp"
#include "html.hpp"

#include "ddp/common/text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ddp::profiler {
namespace {

using nlohmann::json;

}  // namespace

json reportJson(const Report& r) {
  const auto& t = r.timing;
  json findings = json::array();
  for (const auto& f : r.findings)
    findings.push_back({{"kind", findingKindName(f.kind)},
                        {"severity", severityName(f.severity)},
                        {"ranks", f.ranks},
                        {"evidence", f.evidence},
                        {"fix", f.fix}});
  json phases = json::object();
  for (Phase p : kPhases) phases[std::string(phaseName(p))] = t.phaseShare[p];
  json ranks = json::array();
  for (const auto& rank : t.ranks) {
    json rankPhases = json::object();
    for (Phase p : kPhases) rankPhases[std::string(phaseName(p))] = rank.phaseMsMean[p];
    ranks.push_back({{"rank", rank.rank},
                     {"steps", rank.steps},
                     {"step_ms_median", rank.stepMsMedian},
                     {"step_ms_p95", rank.stepMsP95},
                     {"compute_ms_median", rank.computeMsMedian},
                     {"phases_ms_mean", rankPhases},
                     {"comm_ms_mean", rank.commMsMean},
                     {"samples_per_step", rank.samplesPerStep},
                     {"slowest_share", rank.slowestShare}});
  }
  json straggler = nullptr;
  if (t.straggler)
    straggler = {{"rank", t.straggler->rank},
                 {"slowest_share", t.straggler->slowestShare},
                 {"extra_compute_ms", t.straggler->extraComputeMs},
                 {"others_wait_ms", t.straggler->othersWaitMs}};
  json exits = json::array();
  for (const auto& e : r.run.exits)
    exits.push_back({{"rank", e.rank},
                     {"exit_code", e.exitCode ? json(*e.exitCode) : json(nullptr)},
                     {"signal", e.signal ? json(*e.signal) : json(nullptr)},
                     {"failed", e.failed()}});
  json utilisation = json::array();
  for (const auto& u : r.timing.utilisation)
    utilisation.push_back({{"rank", u.rank},
                           {"samples", u.samples},
                           {"cpu_pct_mean", u.cpuPctMean},
                           {"cpu_pct_max", u.cpuPctMax},
                           {"rss_mib_max", u.rssMibMax},
                           {"gpu_util_pct_mean", u.gpuUtilPctMean ? json(*u.gpuUtilPctMean) : json(nullptr)},
                           {"gpu_mem_used_mib_max", u.gpuMemUsedMibMax ? json(*u.gpuMemUsedMibMax) : json(nullptr)}});
  return {{"run_dir", r.run.dir},
          {"world_size", r.run.worldSize ? json(*r.run.worldSize) : json(nullptr)},
          {"findings", findings},
          {"steps",
           {{"analysed", t.stepsAnalysed},
            {"max_recorded", t.maxSteps},
            {"warmup_skipped", t.warmupSkipped},
            {"step_ms_median", t.stepMsMedian},
            {"step_ms_p95", t.stepMsP95}}},
          {"scaling",
           {{"ranks", t.ranks.size()},
            {"samples_per_step", t.globalSamplesPerStep},
            {"samples_per_s", t.samplesPerSecond}}},
          {"phases", phases},
          {"communication",
           {{"exposed_share", t.exposedCommShare},
            {"comm_ms_mean", t.commMsMean},
            {"overlap_fraction", t.overlapFraction ? json(*t.overlapFraction) : json(nullptr)}}},
          {"imbalance",
           {{"run", t.imbalanceRun},
            {"step_median", t.imbalanceStepMedian},
            {"step_max", t.imbalanceStepMax},
            {"straggler", straggler}}},
          {"ranks", ranks},
          {"step_matrix", {{"steps", t.matrixSteps}, {"step_ms", t.stepMatrix}}},
          {"missing_ranks", t.missingRanks},
          {"short_ranks", t.shortRanks},
          {"exits", exits},
          {"utilisation", utilisation},
          {"nccl", r.run.nccl ? toJson(*r.run.nccl) : json(nullptr)},
          {"problems", r.run.problems}};
}

std::string renderReportText(const Report& r) {
  const auto& t = r.timing;
  std::string out = fmt::format("ddprof report: {}\n", r.run.dir);
  if (t.stepsAnalysed > 0) {
    out += fmt::format(
        "{} ranks, {} steps analysed{}; step {:.2f} ms median, {:.2f} ms p95; {:.1f} samples/s "
        "({} samples per step)\n",
        t.ranks.size(), t.stepsAnalysed, t.warmupSkipped ? " (first skipped as warm-up)" : "", t.stepMsMedian,
        t.stepMsP95, t.samplesPerSecond, t.globalSamplesPerStep);
    out += "phases:";
    for (Phase p : kPhases) out += fmt::format(" {} {}", phaseName(p), percent(t.phaseShare[p]));
    out += fmt::format(
        "\ncommunication: {:.2f} ms per step, {} of the step exposed{}; imbalance {:.2f} (slowest/mean compute)\n",
        t.commMsMean, percent(t.exposedCommShare),
        t.overlapFraction ? fmt::format(", {} hidden behind backward", percent(*t.overlapFraction)) : "",
        t.imbalanceRun);
  } else {
    out += "no step timings to analyse\n";
  }
  out += "\nfindings:\n";
  if (r.findings.empty()) out += "  none: no rule found a problem\n";
  for (const auto& f : r.findings) {
    out += fmt::format("  [{}] {}{}: {}\n", severityName(f.severity), findingKindName(f.kind),
                       f.ranks.empty() ? "" : " (rank " + rankList(f.ranks) + ")", f.evidence);
    out += fmt::format("      fix: {}\n", f.fix);
  }
  if (!t.ranks.empty()) {
    out += fmt::format("\n{:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}\n", "rank", "steps", "step_ms",
                       "compute", "data", "comm_wait", "comm", "slowest");
    for (const auto& rank : t.ranks)
      out += fmt::format("{:>6} {:>6} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>8}\n", rank.rank, rank.steps,
                         rank.stepMsMedian, rank.computeMsMedian, rank.phaseMsMean[Phase::kData],
                         rank.phaseMsMean[Phase::kCommWait], rank.commMsMean, percent(rank.slowestShare));
  }
  if (!t.shortRanks.empty())
    out += fmt::format("ranks with fewer steps than the longest ({}): {}\n", t.maxSteps, rankList(t.shortRanks));
  if (r.run.nccl) out += "\nNCCL\n" + renderNcclSummary(*r.run.nccl);
  if (!r.run.problems.empty()) {
    out += "\nproblems reading the run directory:\n";
    for (const auto& p : r.run.problems) out += "  " + p + "\n";
  }
  return out;
}

std::string renderReportMarkdown(const Report& r) {
  const auto& t = r.timing;
  std::string out = fmt::format("# ddprof report: `{}`\n\n", r.run.dir);
  out += "## Findings\n\n";
  if (r.findings.empty()) out += "No rule found a problem.\n";
  for (const auto& f : r.findings)
    out += fmt::format("- **{}** `{}`{} — {}  \n  *Fix:* {}\n", severityName(f.severity), findingKindName(f.kind),
                       f.ranks.empty() ? "" : " (rank " + rankList(f.ranks) + ")", f.evidence, f.fix);
  if (t.stepsAnalysed > 0) {
    out += fmt::format(
        "\n## Steps\n\n{} ranks, {} steps analysed. Step time {:.2f} ms median, {:.2f} ms p95; "
        "{:.1f} samples/s. Exposed communication {}; imbalance {:.2f}.\n\n",
        t.ranks.size(), t.stepsAnalysed, t.stepMsMedian, t.stepMsP95, t.samplesPerSecond, percent(t.exposedCommShare),
        t.imbalanceRun);
    out += "| rank | steps | step ms | compute ms | data ms | comm wait ms | comm ms | slowest in |\n";
    out += "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& rank : t.ranks)
      out += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} |\n", rank.rank, rank.steps,
                         rank.stepMsMedian, rank.computeMsMedian, rank.phaseMsMean[Phase::kData],
                         rank.phaseMsMean[Phase::kCommWait], rank.commMsMean, percent(rank.slowestShare));
  }
  if (r.run.nccl) out += "\n## NCCL\n\n```\n" + renderNcclSummary(*r.run.nccl) + "```\n";
  if (!r.run.problems.empty()) {
    out += "\n## Problems reading the run directory\n\n";
    for (const auto& p : r.run.problems) out += "- " + p + "\n";
  }
  return out;
}

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

RenderedReport reportRun(const std::string& dir, bool write) {
  const RunLayout layout(dir);
  auto run = loadRun(dir);
  auto timing = analyseTimings(run);
  auto findings = diagnose(run, timing);
  Report report{run, timing, findings};
  RenderedReport out{renderReportText(report),
                     ddp::jsonText(reportJson(report), 2) + "\n",
                     renderReportMarkdown(report),
                     renderReportHtml(report),
                     run.problems,
                     timing.stepsAnalysed > 0 || run.nccl || !run.exits.empty()};
  if (write) {
    writeFileAtomically(layout.report(ReportFile::kText), out.text);
    writeFileAtomically(layout.report(ReportFile::kJson), out.json);
    writeFileAtomically(layout.report(ReportFile::kMarkdown), out.markdown);
    writeFileAtomically(layout.report(ReportFile::kHtml), out.html);
    if (!run.timings.empty()) writeFileAtomically(layout.report(ReportFile::kTrace), jsonText(traceJson(run)) + "\n");
  }
  return out;
}

}  // namespace ddp::profiler
