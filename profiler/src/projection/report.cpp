// `ddprof project`'s output: one table (the measured run, then each target), the verdict and
// every assumption with its source, as text, Markdown, JSON or HTML (docs/projection.md).
#include "ddp/common/text.hpp"
#include "ddp/profiler/projection/projection.hpp"
#include "render/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ddp::profiler {
namespace {

using nlohmann::json;

std::string number(const std::optional<double>& x, const char* format = "{:.4g}") {
  return x ? fmt::format(fmt::runtime(format), *x) : "-";
}

struct Row {
  std::string metric;
  std::vector<std::string> cells;  // the run, then each target
};

std::vector<Row> rows(const ProjectionReport& p) {
  std::vector<Row> out;
  auto add = [&](std::string metric, std::string run, auto target) {
    Row row{std::move(metric), {std::move(run)}};
    for (const auto& t : p.targets) row.cells.push_back(target(t));
    out.push_back(std::move(row));
  };
  add("shape", fmt::format("{} ranks on {} host(s), {}", p.ranks, p.hosts, p.device), [](const Projection& t) {
    return fmt::format("{} ranks on {} host(s), {}", t.ranks, t.target.hosts, t.target.device);
  });
  add("compute", "measured", [](const Projection& t) { return fmt::format("x{:.3g}", t.computeScale); });
  add("allreduce busbw",
      p.calibration.busbwGbps > 0 ? fmt::format("{:.3g} GB/s (measured)", p.calibration.busbwGbps)
                                  : std::string("- (within the latency)"),
      [](const Projection& t) {
        return t.ranks > 1 ? fmt::format("{:.3g} GB/s ({})", t.busbwGbps, t.bottleneck) : std::string("- (1 rank)");
      });
  add("step time", fmt::format("{:.2f} ms", p.stepMs),
      [](const Projection& t) { return fmt::format("{:.2f} ms", t.stepMs); });
  add("compute + glue", fmt::format("{:.2f} ms", p.computeMs),
      [](const Projection& t) { return fmt::format("{:.2f} ms", t.computeMs); });
  auto share = [](double part, double whole) { return whole > 0 ? percent(part / whole) : std::string("-"); };
  add("exposed communication", fmt::format("{:.2f} ms ({})", p.exposedMs, share(p.exposedMs, p.stepMs)),
      [&](const Projection& t) { return fmt::format("{:.2f} ms ({})", t.exposedMs, share(t.exposedMs, t.stepMs)); });
  add("samples per step", std::to_string(p.samplesPerStep),
      [](const Projection& t) { return std::to_string(t.samplesPerStep); });
  add("throughput", fmt::format("{:.1f} samples/s", p.samplesPerSecond),
      [](const Projection& t) { return fmt::format("{:.1f} samples/s", t.samplesPerSecond); });
  add("against the run", "1.00x", [&](const Projection& t) {
    return p.samplesPerSecond > 0 ? fmt::format("{:.2f}x", t.samplesPerSecond / p.samplesPerSecond) : std::string("-");
  });
  add("per-rank efficiency", "100 %", [](const Projection& t) { return percent(t.efficiency, 0); });
  add("dominated by", "-", [](const Projection& t) { return t.dominant; });
  const bool priced = p.pricePerHour || std::any_of(p.targets.begin(), p.targets.end(),
                                                    [](const Projection& t) { return t.pricePerHour.has_value(); });
  if (priced) {
    add("price per instance-hour", number(p.pricePerHour), [](const Projection& t) { return number(t.pricePerHour); });
    add("cost per hour", number(p.costPerHour), [](const Projection& t) { return number(t.costPerHour); });
    add("cost per 1 M samples", number(p.costPerMillionSamples),
        [](const Projection& t) { return number(t.costPerMillionSamples); });
  }
  if (p.datasetSize) {
    add(fmt::format("epoch of {} samples", *p.datasetSize),
        p.samplesPerSecond > 0
            ? fmt::format("{:.3g} h", static_cast<double>(*p.datasetSize) / p.samplesPerSecond / 3600)
            : "-",
        [](const Projection& t) {
          return t.epochHours ? fmt::format("{:.3g} h{}", *t.epochHours,
                                            t.costPerEpoch ? fmt::format(", cost {:.4g}", *t.costPerEpoch) : "")
                              : std::string("-");
        });
  }
  return out;
}

std::vector<std::string> header(const ProjectionReport& p, bool numbered) {
  std::vector<std::string> h{"", "measured"};
  for (size_t i = 0; i < p.targets.size(); ++i)
    h.push_back(numbered ? fmt::format("[{}]", i + 1) : p.targets[i].target.text);
  return h;
}

json optionalJson(const std::optional<double>& x) { return x ? json(*x) : json(nullptr); }

}  // namespace

json projectionJson(const ProjectionReport& p) {
  const auto& c = p.calibration;
  json targets = json::array();
  for (const auto& t : p.targets) {
    auto link = [](const std::optional<TargetLink>& l) {
      return l ? json{{"kind", l->kind}, {"bytes_per_s", optionalJson(l->bytesPerS)}, {"source", l->source}}
               : json(nullptr);
    };
    targets.push_back({{"target", t.target.text},
                       {"instance", t.target.instance ? toJson(*t.target.instance) : json(nullptr)},
                       {"hosts", t.target.hosts},
                       {"ranks_per_host", t.target.ranksPerHost},
                       {"ranks", t.ranks},
                       {"device", t.target.device},
                       {"intra", link(t.target.intra)},
                       {"inter", link(t.target.inter)},
                       {"compute_scale", t.computeScale},
                       {"compute_why", t.computeWhy},
                       {"busbw_gbps", t.busbwGbps},
                       {"bottleneck", t.bottleneck},
                       {"step_ms", t.stepMs},
                       {"compute_ms", t.computeMs},
                       {"exposed_ms", t.exposedMs},
                       {"comm_ms", t.commMs},
                       {"samples_per_step", t.samplesPerStep},
                       {"samples_per_s", t.samplesPerSecond},
                       {"efficiency", t.efficiency},
                       {"dominant", t.dominant},
                       {"price_per_hour", optionalJson(t.pricePerHour)},
                       {"cost_per_hour", optionalJson(t.costPerHour)},
                       {"cost_per_million_samples", optionalJson(t.costPerMillionSamples)},
                       {"epoch_hours", optionalJson(t.epochHours)},
                       {"cost_per_epoch", optionalJson(t.costPerEpoch)}});
  }
  return {{"run", p.dir},
          {"measured",
           {{"ranks", p.ranks},
            {"hosts", p.hosts},
            {"device", p.device},
            {"steps", p.steps},
            {"step_ms", p.stepMs},
            {"compute_ms", p.computeMs},
            {"exposed_ms", p.exposedMs},
            {"samples_per_step", p.samplesPerStep},
            {"samples_per_s", p.samplesPerSecond},
            {"price_per_hour", optionalJson(p.pricePerHour)},
            {"cost_per_hour", optionalJson(p.costPerHour)},
            {"cost_per_million_samples", optionalJson(p.costPerMillionSamples)}}},
          {"calibration",
           {{"buckets", c.buckets},
            {"bytes_per_step", c.bytesPerStep},
            {"transfer_ms_per_step", c.transferMsPerStep},
            {"latency_ms", c.latencyMs},
            {"ms_per_byte", c.msPerByte},
            {"latency_fitted", c.latencyFitted},
            {"busbw_gbps", c.busbwGbps > 0 ? json(c.busbwGbps) : json(nullptr)},
            {"link_gbps", optionalJson(c.linkGbps)},
            {"link_source", c.linkSource},
            {"host_ns_per_bus_byte", c.hostSecondsPerByte * 1e9},
            {"latency_scale", c.latencyScale},
            {"replay_error_median", c.replayErrorMedian}}},
          {"dataset_size", p.datasetSize ? json(*p.datasetSize) : json(nullptr)},
          {"targets", targets},
          {"verdict", p.verdict},
          {"assumptions", p.assumptions}};
}

std::string renderProjectionText(const ProjectionReport& p) {
  std::string out = fmt::format("ddprof project {}: {} steps of {} ranks replayed onto {} target(s)\n\n", p.dir,
                                p.steps, p.ranks, p.targets.size());
  for (size_t i = 0; i < p.targets.size(); ++i) out += fmt::format("[{}] {}\n", i + 1, p.targets[i].target.text);
  const auto head = header(p, true);
  const auto body = rows(p);
  std::vector<size_t> width(head.size(), 0);
  for (size_t j = 0; j < head.size(); ++j) width[j] = head[j].size();
  for (const auto& r : body) {
    width[0] = std::max(width[0], r.metric.size());
    for (size_t j = 0; j < r.cells.size(); ++j) width[j + 1] = std::max(width[j + 1], r.cells[j].size());
  }
  auto line = [&](const std::string& first, const std::vector<std::string>& cells) {
    std::string l = fmt::format("{:<{}}", first, width[0]);
    for (size_t j = 0; j < cells.size(); ++j) l += fmt::format("  {:<{}}", cells[j], width[j + 1]);
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  out += "\n" + line(head[0], {head.begin() + 1, head.end()});
  for (const auto& r : body) out += line(r.metric, r.cells);
  out += "\n";
  for (const auto& v : p.verdict) out += v + "\n";
  out += fmt::format("\nassumptions (replay error on the run's own shape before anchoring: {}):\n",
                     percent(p.calibration.replayErrorMedian));
  for (const auto& a : p.assumptions) out += "  - " + a + "\n";
  return out;
}

std::string renderProjectionMarkdown(const ProjectionReport& p) {
  std::string out = fmt::format("# Projection of {}\n\n", p.dir);
  for (const auto& v : p.verdict) out += "- " + v + "\n";
  const auto head = header(p, false);
  out += "\n|";
  for (const auto& h : head) out += " " + h + " |";
  out += "\n|";
  for (size_t j = 0; j < head.size(); ++j) out += j == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto& r : rows(p)) {
    out += "| " + r.metric + " |";
    for (const auto& c : r.cells) out += " " + c + " |";
    out += "\n";
  }
  out += "\n## Assumptions\n\n";
  for (const auto& a : p.assumptions) out += "- " + a + "\n";
  return out;
}

std::string projectionChart(const ProjectionReport& p) {
  std::vector<html::Series> bars{{"measured", {p.computeMs, p.exposedMs}}};
  for (const auto& t : p.targets) bars.push_back({t.target.text, {t.computeMs, t.exposedMs}});
  return html::stackedBars("projected step time", {"compute", "exposed communication"}, bars, "ms");
}

std::string renderProjectionHtml(const ProjectionReport& p) {
  html::Page page(fmt::format("ddprof project: {}", p.dir));
  page.heading(1, fmt::format("Projection of {}", p.dir));
  std::string verdict;
  for (const auto& v : p.verdict) verdict += "<li>" + html::escape(v) + "</li>";
  if (!verdict.empty()) page.raw("<ul class=\"verdict\">" + verdict + "</ul>");
  page.raw(projectionChart(p));
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows(p)) {
    std::vector<std::string> row{r.metric};
    row.insert(row.end(), r.cells.begin(), r.cells.end());
    cells.push_back(std::move(row));
  }
  page.table(header(p, false), cells);
  page.heading(2, "Assumptions");
  std::string list;
  for (const auto& a : p.assumptions) list += "<li>" + html::escape(a) + "</li>";
  page.raw("<ul>" + list + "</ul>");
  return page.finish();
}

}  // namespace ddp::profiler
