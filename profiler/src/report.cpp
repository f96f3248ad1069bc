#include "ddp/profiler/report.hpp"

#include "ddp/comm/files.hpp"
#include "ddp/comm/json_text.hpp"
#include "ddp/profiler/trace.hpp"
#include "html.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ddp::profiler {
namespace {

using comm::Phase;
using nlohmann::json;

std::string pct(double x) { return fmt::format("{:.1f} %", 100 * x); }

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

}  // namespace

json reportJson(const Report& r) {
  const auto& t = r.timing;
  json findings = json::array();
  for (const auto& f : r.findings)
    findings.push_back({{"kind", f.kind}, {"severity", severityName(f.severity)}, {"ranks", f.ranks},
                        {"evidence", f.evidence}, {"fix", f.fix}});
  json phases = json::object();
  for (Phase p : comm::kPhases) phases[std::string(comm::phaseName(p))] = t.phaseShare[static_cast<size_t>(p)];
  json ranks = json::array();
  for (const auto& rank : t.ranks) {
    json rankPhases = json::object();
    for (Phase p : comm::kPhases) rankPhases[std::string(comm::phaseName(p))] = rank.phaseMsMean[static_cast<size_t>(p)];
    ranks.push_back({{"rank", rank.rank}, {"steps", rank.steps}, {"step_ms_median", rank.stepMsMedian},
                     {"step_ms_p95", rank.stepMsP95}, {"compute_ms_median", rank.computeMsMedian},
                     {"phases_ms_mean", rankPhases}, {"comm_ms_mean", rank.commMsMean},
                     {"samples_per_step", rank.samplesPerStep}, {"slowest_share", rank.slowestShare}});
  }
  json straggler = nullptr;
  if (t.straggler)
    straggler = {{"rank", t.straggler->rank}, {"slowest_share", t.straggler->slowestShare},
                 {"extra_compute_ms", t.straggler->extraComputeMs}, {"others_wait_ms", t.straggler->othersWaitMs}};
  json exits = json::array();
  for (const auto& e : r.run.exits)
    exits.push_back({{"rank", e.rank}, {"exit_code", e.exitCode ? json(*e.exitCode) : json(nullptr)},
                     {"signal", e.signal ? json(*e.signal) : json(nullptr)}, {"failed", e.failed()}});
  json utilisation = json::array();
  for (const auto& u : r.timing.utilisation)
    utilisation.push_back({{"rank", u.rank}, {"samples", u.samples}, {"cpu_pct_mean", u.cpuPctMean},
                           {"cpu_pct_max", u.cpuPctMax}, {"rss_mib_max", u.rssMibMax},
                           {"gpu_util_pct_mean", u.gpuUtilPctMean ? json(*u.gpuUtilPctMean) : json(nullptr)},
                           {"gpu_mem_used_mib_max", u.gpuMemUsedMibMax ? json(*u.gpuMemUsedMibMax) : json(nullptr)}});
  return {{"run_dir", r.run.dir},
          {"world_size", r.run.worldSize ? json(*r.run.worldSize) : json(nullptr)},
          {"findings", findings},
          {"steps", {{"analysed", t.stepsAnalysed}, {"max_recorded", t.maxSteps}, {"warmup_skipped", t.warmupSkipped},
                     {"step_ms_median", t.stepMsMedian}, {"step_ms_p95", t.stepMsP95}}},
          {"scaling", {{"ranks", t.ranks.size()}, {"samples_per_step", t.globalSamplesPerStep},
                       {"samples_per_s", t.samplesPerSecond}}},
          {"phases", phases},
          {"communication", {{"exposed_share", t.exposedCommShare}, {"comm_ms_mean", t.commMsMean},
                             {"overlap_fraction", t.overlapFraction ? json(*t.overlapFraction) : json(nullptr)}}},
          {"imbalance", {{"run", t.imbalanceRun}, {"step_median", t.imbalanceStepMedian}, {"step_max", t.imbalanceStepMax},
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
    out += fmt::format("{} ranks, {} steps analysed{}; step {:.2f} ms median, {:.2f} ms p95; {:.1f} samples/s "
                       "({} samples per step)\n",
                       t.ranks.size(), t.stepsAnalysed, t.warmupSkipped ? " (first skipped as warm-up)" : "",
                       t.stepMsMedian, t.stepMsP95, t.samplesPerSecond, t.globalSamplesPerStep);
    out += "phases:";
    for (Phase p : comm::kPhases)
      out += fmt::format(" {} {}", comm::phaseName(p), pct(t.phaseShare[static_cast<size_t>(p)]));
    out += fmt::format("\ncommunication: {:.2f} ms per step, {} of the step exposed{}; imbalance {:.2f} (slowest/mean compute)\n",
                       t.commMsMean, pct(t.exposedCommShare),
                       t.overlapFraction ? fmt::format(", {} hidden behind backward", pct(*t.overlapFraction)) : "",
                       t.imbalanceRun);
  } else {
    out += "no step timings to analyse\n";
  }
  out += "\nfindings:\n";
  if (r.findings.empty()) out += "  none: no rule found a problem\n";
  for (const auto& f : r.findings) {
    out += fmt::format("  [{}] {}{}: {}\n", severityName(f.severity), f.kind,
                       f.ranks.empty() ? "" : " (rank " + rankList(f.ranks) + ")", f.evidence);
    out += fmt::format("      fix: {}\n", f.fix);
  }
  if (!t.ranks.empty()) {
    out += fmt::format("\n{:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}\n", "rank", "steps", "step_ms", "compute",
                       "data", "comm_wait", "comm", "slowest");
    for (const auto& rank : t.ranks)
      out += fmt::format("{:>6} {:>6} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>8}\n", rank.rank, rank.steps,
                         rank.stepMsMedian, rank.computeMsMedian, rank.phaseMsMean[static_cast<size_t>(Phase::kData)],
                         rank.phaseMsMean[static_cast<size_t>(Phase::kCommWait)], rank.commMsMean, pct(rank.slowestShare));
  }
  if (!t.shortRanks.empty()) out += fmt::format("ranks with fewer steps than the longest ({}): {}\n", t.maxSteps, rankList(t.shortRanks));
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
    out += fmt::format("- **{}** `{}`{} — {}  \n  *Fix:* {}\n", severityName(f.severity), f.kind,
                       f.ranks.empty() ? "" : " (rank " + rankList(f.ranks) + ")", f.evidence, f.fix);
  if (t.stepsAnalysed > 0) {
    out += fmt::format("\n## Steps\n\n{} ranks, {} steps analysed. Step time {:.2f} ms median, {:.2f} ms p95; "
                       "{:.1f} samples/s. Exposed communication {}; imbalance {:.2f}.\n\n",
                       t.ranks.size(), t.stepsAnalysed, t.stepMsMedian, t.stepMsP95, t.samplesPerSecond,
                       pct(t.exposedCommShare), t.imbalanceRun);
    out += "| rank | steps | step ms | compute ms | data ms | comm wait ms | comm ms | slowest in |\n";
    out += "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& rank : t.ranks)
      out += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} |\n", rank.rank, rank.steps,
                         rank.stepMsMedian, rank.computeMsMedian, rank.phaseMsMean[static_cast<size_t>(Phase::kData)],
                         rank.phaseMsMean[static_cast<size_t>(Phase::kCommWait)], rank.commMsMean, pct(rank.slowestShare));
  }
  if (r.run.nccl) out += "\n## NCCL\n\n```\n" + renderNcclSummary(*r.run.nccl) + "```\n";
  if (!r.run.problems.empty()) {
    out += "\n## Problems reading the run directory\n\n";
    for (const auto& p : r.run.problems) out += "- " + p + "\n";
  }
  return out;
}

std::string renderReportHtml(const Report& r) {
  const auto& t = r.timing;
  html::Page page("ddprof report: " + r.run.dir);
  page.heading(1, "ddprof report");
  page.raw("<p class=\"muted\">" + html::escape(r.run.dir) + "</p>\n");
  page.heading(2, "Findings");
  if (r.findings.empty()) page.paragraph("No rule found a problem.");
  for (const auto& f : r.findings)
    page.raw(fmt::format("<div class=\"finding {0}\"><b>{0}</b> <code>{1}</code>{2}: {3}<div class=\"fix\">Fix: {4}</div></div>\n",
                         severityName(f.severity), html::escape(f.kind),
                         f.ranks.empty() ? "" : " (rank " + rankList(f.ranks) + ")", html::escape(f.evidence),
                         html::escape(f.fix)));
  if (t.stepsAnalysed > 0) {
    page.heading(2, "Steps");
    page.table({"ranks", "steps analysed", "step ms (median)", "step ms (p95)", "samples/s", "exposed communication", "imbalance"},
               {{std::to_string(t.ranks.size()), std::to_string(t.stepsAnalysed), fmt::format("{:.2f}", t.stepMsMedian),
                 fmt::format("{:.2f}", t.stepMsP95), fmt::format("{:.1f}", t.samplesPerSecond), pct(t.exposedCommShare),
                 fmt::format("{:.2f}", t.imbalanceRun)}});
    std::vector<std::string> phases;
    for (Phase p : comm::kPhases) phases.emplace_back(comm::phaseName(p));
    std::vector<html::Series> bars;
    for (const auto& rank : t.ranks)
      bars.push_back({fmt::format("rank {}", rank.rank), {rank.phaseMsMean.begin(), rank.phaseMsMean.end()}});
    page.raw(html::stackedBars("Step phases per rank (mean ms per step)", phases, bars, "ms"));
    std::vector<double> xs(t.matrixSteps.begin(), t.matrixSteps.end());
    std::vector<html::Series> lines;
    for (size_t i = 0; i < t.ranks.size(); ++i) lines.push_back({fmt::format("rank {}", t.ranks[i].rank), t.stepMatrix[i]});
    page.raw(html::lineChart("Step time over the run", xs, lines, "step", "ms"));
    std::vector<std::vector<std::string>> rows;
    for (const auto& rank : t.ranks)
      rows.push_back({std::to_string(rank.rank), std::to_string(rank.steps), fmt::format("{:.2f}", rank.stepMsMedian),
                      fmt::format("{:.2f}", rank.computeMsMedian), fmt::format("{:.2f}", rank.phaseMsMean[static_cast<size_t>(Phase::kData)]),
                      fmt::format("{:.2f}", rank.phaseMsMean[static_cast<size_t>(Phase::kCommWait)]),
                      fmt::format("{:.2f}", rank.commMsMean), pct(rank.slowestShare)});
    page.table({"rank", "steps", "step ms", "compute ms", "data ms", "comm wait ms", "comm ms", "slowest in"}, rows);
  }
  if (!r.run.utilisation.empty()) {
    // Samples of all ranks on one time axis, in half-second slots from the first sample.
    constexpr double kSlotS = 0.5;
    int64_t first = INT64_MAX, last = 0;
    for (const auto& [rank, samples] : r.run.utilisation)
      for (const auto& u : samples) {
        first = std::min(first, u.tUnixUs);
        last = std::max(last, u.tUnixUs);
      }
    const size_t slots = static_cast<size_t>((last - first) / 1e6 / kSlotS) + 1;
    if (slots <= 20000) {
      std::vector<double> xs;
      for (size_t i = 0; i < slots; ++i) xs.push_back(static_cast<double>(i) * kSlotS);
      std::vector<html::Series> cpu, gpu;
      for (const auto& [rank, samples] : r.run.utilisation) {
        html::Series c{fmt::format("rank {}", rank), std::vector<double>(slots, std::nan(""))}, g = c;
        bool anyGpu = false;
        for (const auto& u : samples) {
          const auto slot = static_cast<size_t>(std::lround(static_cast<double>(u.tUnixUs - first) / 1e6 / kSlotS));
          c.values[std::min(slot, slots - 1)] = u.cpuPct;
          if (u.gpuUtilPct) {
            g.values[std::min(slot, slots - 1)] = *u.gpuUtilPct;
            anyGpu = true;
          }
        }
        cpu.push_back(std::move(c));
        if (anyGpu) gpu.push_back(std::move(g));
      }
      page.heading(2, "Utilisation");
      if (!gpu.empty()) page.raw(html::lineChart("GPU utilisation per rank (NVML GPU-Util)", xs, gpu, "seconds", "%"));
      page.raw(html::lineChart("CPU use per rank's processes (100 % = one core)", xs, cpu, "seconds", "%"));
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& u : r.timing.utilisation)
      rows.push_back({std::to_string(u.rank), std::to_string(u.samples), fmt::format("{:.1f}", u.cpuPctMean),
                      fmt::format("{:.1f}", u.rssMibMax),
                      u.gpuUtilPctMean ? fmt::format("{:.1f}", *u.gpuUtilPctMean) : "-",
                      u.gpuMemUsedMibMax ? fmt::format("{:.0f}", *u.gpuMemUsedMibMax) : "-"});
    page.table({"rank", "samples", "CPU % (mean)", "RSS MiB (max)", "GPU util % (mean)", "GPU memory MiB (max)"}, rows);
  }
  if (r.run.nccl && !r.run.nccl->edges.empty()) {
    const auto& n = *r.run.nccl;
    int ranks = n.nranks.value_or(0);
    for (const auto& [key, edge] : n.edges) ranks = std::max({ranks, edge.from + 1, edge.to + 1});
    std::vector<std::string> labels, classes;
    for (int i = 0; i < ranks; ++i) labels.push_back(std::to_string(i));
    std::vector<std::vector<std::string>> cells(ranks, std::vector<std::string>(ranks));
    for (const auto& [key, edge] : n.edges) {
      std::string name(transportClassName(edge.transport));
      auto& cell = cells[edge.from][edge.to];
      cell = cell.empty() ? name : cell + "+" + name;
      if (std::find(classes.begin(), classes.end(), cell) == classes.end()) classes.push_back(cell);
    }
    page.heading(2, "Transports between ranks");
    page.raw(html::grid("NCCL transport, rank (row) to rank (column)", labels, cells, classes));
  }
  if (!r.run.bench.empty()) {
    std::map<std::string, std::map<int64_t, double>> curves;  // "op backend np" -> bytes -> busbw
    for (const auto& b : r.run.bench) {
      auto& v = curves[fmt::format("{} {} np{}", b.op, b.backend, b.nranks)][b.bytes];
      v = std::max(v, b.busbwGbps);
    }
    std::set<int64_t> sizes;
    for (const auto& [name, curve] : curves)
      for (const auto& [bytes, bw] : curve) sizes.insert(bytes);
    std::vector<double> xs(sizes.begin(), sizes.end());
    std::vector<html::Series> series;
    for (const auto& [name, curve] : curves) {
      html::Series s{name, {}};
      for (auto bytes : sizes) s.values.push_back(curve.count(bytes) ? curve.at(bytes) : std::nan(""));
      series.push_back(std::move(s));
    }
    page.heading(2, "ddpbench bus bandwidth");
    page.raw(html::lineChart("busbw by message size", xs, series, "bytes", "GB/s", true));
  }
  if (r.run.nccl) page.raw("<h2>NCCL</h2><pre>" + html::escape(renderNcclSummary(*r.run.nccl)) + "</pre>\n");
  if (!r.run.problems.empty()) {
    page.heading(2, "Problems reading the run directory");
    for (const auto& p : r.run.problems) page.paragraph(p);
  }
  return page.finish();
}

json scalingJson(const Scaling& s) {
  json points = json::array();
  for (const auto& p : s.points)
    points.push_back({{"run_dir", p.dir}, {"ranks", p.worldSize}, {"step_ms", p.stepMs},
                      {"samples_per_s", p.samplesPerSecond}, {"ideal_step_ms", p.idealStepMs},
                      {"ideal_samples_per_s", p.idealSamplesPerSecond}, {"efficiency", p.efficiency}});
  return {{"kind", s.kind}, {"points", points}};
}

std::string renderScalingText(const Scaling& s) {
  std::string out = fmt::format("{} scaling ({})\n", s.kind,
                                s.kind == "weak" ? "same batch per rank: ideal step time stays constant"
                                                 : "same global batch: ideal step time falls as 1/ranks");
  out += fmt::format("{:>6} {:>10} {:>10} {:>12} {:>12} {:>10}  {}\n", "ranks", "step_ms", "ideal_ms", "samples/s",
                     "ideal", "efficiency", "run");
  for (const auto& p : s.points)
    out += fmt::format("{:>6} {:>10.2f} {:>10.2f} {:>12.1f} {:>12.1f} {:>10}  {}\n", p.worldSize, p.stepMs, p.idealStepMs,
                       p.samplesPerSecond, p.idealSamplesPerSecond, pct(p.efficiency), p.dir);
  return out;
}

std::string renderScalingHtml(const Scaling& s) {
  html::Page page("ddprof scaling");
  page.heading(1, s.kind + " scaling");
  std::vector<double> xs;
  html::Series measured{"measured", {}}, ideal{"ideal", {}};
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : s.points) {
    xs.push_back(p.worldSize);
    measured.values.push_back(p.samplesPerSecond);
    ideal.values.push_back(p.idealSamplesPerSecond);
    rows.push_back({std::to_string(p.worldSize), fmt::format("{:.2f}", p.stepMs), fmt::format("{:.2f}", p.idealStepMs),
                    fmt::format("{:.1f}", p.samplesPerSecond), fmt::format("{:.1f}", p.idealSamplesPerSecond),
                    pct(p.efficiency), p.dir});
  }
  page.raw(html::lineChart("Throughput against ideal", xs, {measured, ideal}, "ranks", "samples/s", false, {"ideal"}));
  page.table({"ranks", "step ms", "ideal ms", "samples/s", "ideal", "efficiency", "run"}, rows);
  return page.finish();
}

RenderedReport reportRun(const std::string& dir, bool write) {
  auto run = loadRun(dir);
  auto timing = analyseTimings(run);
  auto findings = diagnose(run, timing);
  Report report{run, timing, findings};
  RenderedReport out{renderReportText(report), ddp::jsonText(reportJson(report), 2) + "\n", renderReportMarkdown(report),
                     renderReportHtml(report), run.problems, timing.stepsAnalysed > 0 || run.nccl || !run.exits.empty()};
  if (write) {
    ddp::writeFileAtomically(dir + "/report.txt", out.text);
    ddp::writeFileAtomically(dir + "/report.json", out.json);
    ddp::writeFileAtomically(dir + "/report.md", out.markdown);
    ddp::writeFileAtomically(dir + "/report.html", out.html);
    if (!run.timings.empty()) ddp::writeFileAtomically(dir + "/trace.json", ddp::jsonText(traceJson(run)) + "\n");
  }
  return out;
}

}  // namespace ddp::profiler
