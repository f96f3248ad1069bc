// report.html (docs/report-html.md): findings, step summary, phases per rank, step time over the
// run, the per-rank table, utilisation, the NCCL transport grid, ddpbench busbw, the NCCL
// summary and what could not be read; each section a function.
#include "ddp/profiler/render/report.hpp"

#include "ddp/common/text.hpp"
#include "render/html.hpp"
#include "render/report_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

namespace ddp::profiler {
namespace {

std::string ms(double value) { return fmt::format("{:.2f}", value); }

void findings(const Report& r, html::Page& page) {
  page.raw("<p><b>Verdict:</b> " + html::escape(parts::verdict(r)) + "</p>\n");
  page.heading(2, "Findings");
  if (r.findings.empty()) page.paragraph("No rule found a problem.");
  for (const auto& f : r.findings)
    page.raw(fmt::format(
        "<div class=\"finding {0}\"><b>{0}</b> <code>{1}</code>{2} <i>({3} confidence)</i>: {4}"
        "<div class=\"fix\">Fix: {5}</div><div class=\"fix\">To confirm: {6}</div></div>\n",
        severityName(f.severity), findingKindName(f.kind), parts::rankSuffix(f), confidenceName(f.confidence),
        html::escape(f.evidence), html::escape(f.fix), html::escape(f.confirm)));
}

void steps(const TimingAnalysis& t, html::Page& page) {
  page.heading(2, "Steps");
  page.table({"ranks", "steps analysed", "step ms (median)", "step ms (p95)", "samples/s", "exposed communication",
              "imbalance"},
             {{std::to_string(t.ranks.size()), std::to_string(t.stepsAnalysed), ms(t.stepMsMedian), ms(t.stepMsP95),
               fmt::format("{:.1f}", t.samplesPerSecond), percent(t.exposedCommShare), ms(t.imbalanceRun)}});
  std::vector<std::string> phases;
  for (Phase p : kPhases) phases.emplace_back(phaseName(p));
  std::vector<html::Series> bars;
  for (const auto& rank : t.ranks)
    bars.push_back({fmt::format("rank {}", rank.rank), {rank.phaseMsMean.begin(), rank.phaseMsMean.end()}});
  page.raw(html::stackedBars("Step phases per rank (mean ms per step)", phases, bars, "ms"));
  std::vector<double> xs(t.matrixSteps.begin(), t.matrixSteps.end());
  std::vector<html::Series> lines;
  for (size_t i = 0; i < t.ranks.size(); ++i)
    lines.push_back({fmt::format("rank {}", t.ranks[i].rank), t.stepMatrix[i]});
  page.raw(html::lineChart("Step time over the run", xs, lines, "step", "ms"));
  const auto table = parts::rankTable(t);
  page.paragraph(parts::commSummary(t));
  if (const auto links = parts::linkSummary(t); !links.empty()) page.paragraph(links);
  if (const auto stalls = parts::stallSummary(t); !stalls.empty()) page.paragraph(stalls);
  page.paragraph("Per rank, medians over the analysed steps:");
  page.table(table.header, table.rows);
}

// The lost time as a waterfall from the ideal step to the measured one, and a rank x step heat
// map of the waits and of the compute.
void lostTime(const TimingAnalysis& t, html::Page& page) {
  const auto& l = t.lost;
  const double n = static_cast<double>(std::max<size_t>(1, l.steps));
  page.heading(2, "Where the time went");
  page.paragraph(parts::lossSummary(l) + ".");
  std::vector<std::pair<std::string, double>> parts;
  for (StepPart p : kStepParts)
    if (p != StepPart::kCompute) parts.emplace_back(std::string(stepPartName(p)), l.lostMs[p] / n);
  page.raw(html::waterfall("Ideal step -> measured step (mean ms per step)", {"ideal step", l.idealMs / n}, parts,
                           "measured step", "ms"));
  std::vector<std::string> rows, columns;
  for (const auto& a : l.ranks) rows.push_back(fmt::format("rank {}", a.rank));
  for (auto s : t.matrixSteps) columns.push_back(fmt::format("step {}", s));
  page.raw(html::heatMap("Waiting per rank and step (data, CPU, transfer, late peers; ms)", rows, columns, l.waitMatrix,
                         "ms"));
  page.raw(html::heatMap("Compute per rank and step (ms)", rows, columns, l.computeMatrix, "ms"));
  page.paragraph(parts::accountingSummary(l));
}

// Samples of all ranks on one time axis, in half-second slots from the first sample.
void utilisationCharts(const RunData& run, html::Page& page) {
  constexpr double kSlotS = 0.5;
  constexpr size_t kMaxSlots = 20000;
  int64_t first = INT64_MAX, last = 0;
  for (const auto& [rank, samples] : run.utilisation)
    for (const auto& u : samples) {
      first = std::min(first, u.tUnixUs);
      last = std::max(last, u.tUnixUs);
    }
  const size_t slots = static_cast<size_t>((last - first) / 1e6 / kSlotS) + 1;
  if (slots > kMaxSlots) return;
  std::vector<double> xs;
  for (size_t i = 0; i < slots; ++i) xs.push_back(static_cast<double>(i) * kSlotS);
  std::vector<html::Series> cpu, gpu;
  for (const auto& [rank, samples] : run.utilisation) {
    html::Series c{fmt::format("rank {}", rank), std::vector<double>(slots, std::nan(""))}, g = c;
    bool anyGpu = false;
    for (const auto& u : samples) {
      const auto slot =
          std::min(slots - 1, static_cast<size_t>(std::lround(static_cast<double>(u.tUnixUs - first) / 1e6 / kSlotS)));
      c.values[slot] = u.cpuPct;
      if (u.gpuUtilPct) {
        g.values[slot] = *u.gpuUtilPct;
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

void utilisationTable(const TimingAnalysis& t, html::Page& page) {
  auto value = [](const std::optional<double>& v, const char* format) { return v ? fmt::format(format, *v) : "-"; };
  std::vector<std::vector<std::string>> rows;
  for (const auto& u : t.utilisation)
    rows.push_back({std::to_string(u.rank), std::to_string(u.samples), fmt::format("{:.1f}", u.cpuPctMean),
                    value(u.runDelayPctMean, "{:.1f}"), u.cpus.value_or("-"), std::to_string(u.stoppedSamples),
                    fmt::format("{:.1f}", u.rssMibMax), value(u.gpuUtilPctMean, "{:.1f}"),
                    value(u.gpuMemUsedMibMax, "{:.0f}")});
  page.table({"rank", "samples", "CPU % (mean)", "waiting for a CPU % (mean)", "CPUs", "seen stopped", "RSS MiB (max)",
              "GPU util % (mean)", "GPU memory MiB (max)"},
             rows);
}

void transports(const NcclFacts& n, html::Page& page) {
  int ranks = n.nranks.value_or(0);
  for (const auto& [key, edge] : n.edges) ranks = std::max({ranks, edge.from + 1, edge.to + 1});
  std::vector<std::string> labels, classes;
  for (int i = 0; i < ranks; ++i) labels.push_back(std::to_string(i));
  std::vector<std::vector<std::string>> cells(ranks, std::vector<std::string>(ranks));
  for (const auto& [key, edge] : n.edges) {
    const std::string name(transportClassName(edge.transport));
    auto& cell = cells[edge.from][edge.to];
    cell = cell.empty() ? name : cell + "+" + name;
    if (std::find(classes.begin(), classes.end(), cell) == classes.end()) classes.push_back(cell);
  }
  page.heading(2, "Transports between ranks");
  page.raw(html::grid("NCCL transport, rank (row) to rank (column)", labels, cells, classes));
}

void benchCurves(const std::vector<BenchRow>& bench, html::Page& page) {
  std::map<std::string, std::map<int64_t, double>> curves;  // "op backend np" -> bytes -> busbw
  for (const auto& b : bench) {
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

}  // namespace

std::string renderReportHtml(const Report& r) {
  html::Page page("ddprof report: " + r.run.dir);
  page.heading(1, "ddprof report");
  page.raw("<p class=\"muted\">" + html::escape(r.run.dir) + "</p>\n");
  findings(r, page);
  if (r.timing.stepsAnalysed > 0) {
    lostTime(r.timing, page);
    steps(r.timing, page);
  } else
    page.paragraph("Not measured: " + parts::notMeasured(r));
  for (const auto& line : parts::sourceLines(r)) page.paragraph(line);
  if (!r.run.utilisation.empty()) {
    utilisationCharts(r.run, page);
    utilisationTable(r.timing, page);
  }
  if (r.run.nccl && !r.run.nccl->edges.empty()) transports(*r.run.nccl, page);
  if (!r.run.bench.empty()) benchCurves(r.run.bench, page);
  if (r.projection) {
    page.heading(2, "Projected onto other instances (ddprof project)");
    page.raw(projectionChart(*r.projection));
    std::string verdict;
    for (const auto& v : r.projection->verdict) verdict += "<li>" + html::escape(v) + "</li>";
    page.raw("<ul>" + verdict + "</ul>");
  }
  if (r.run.nccl) page.raw("<h2>NCCL</h2><pre>" + html::escape(renderNcclSummary(*r.run.nccl)) + "</pre>\n");
  if (!r.run.problems.empty()) {
    page.heading(2, "Problems reading the run directory");
    for (const auto& p : r.run.problems) page.paragraph(p);
  }
  return page.finish();
}

}  // namespace ddp::profiler
