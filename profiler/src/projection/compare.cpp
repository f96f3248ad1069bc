#include "ddp/profiler/projection/compare.hpp"

#include "ddp/common/error.hpp"
#include "render/html.hpp"
#include "text.hpp"

#include "ddp/common/run_layout.hpp"
#include "ddp/common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace ddp::profiler {
namespace {

using nlohmann::json;

std::string baseName(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d.substr(d.rfind('/') + 1);
}

RunSummary summarise(const RunData& run, const CompareSide& side) {
  RunSummary s;
  s.dir = run.dir;
  s.label = side.label.empty() ? baseName(run.dir) : side.label;
  s.instance = side.instance;
  if (!s.instance && !run.instance.empty()) {  // recorded by ddprun --instance
    try {
      s.instance = decodeInstance(run.instance);
    } catch (const ConfigError& e) {
      s.missing.push_back(fmt::format("run.json's instance: {}", e.what()));
    }
  }
  s.pricePerHour = side.pricePerHour;
  s.hosts.assign(run.hosts.begin(), run.hosts.end());
  s.instances = std::max<int>(1, static_cast<int>(s.hosts.size()));
  s.backend = commandOption(run.command, "--backend").value_or("");
  const auto timing = analyseTimings(run);
  s.ranks = !timing.ranks.empty() ? static_cast<int>(timing.ranks.size()) : run.worldSize.value_or(0);
  s.findings = diagnose(run, timing);
  if (timing.stepsAnalysed > 0) {
    s.timed = true;
    s.stepMs = timing.stepMsMedian;
    s.samplesPerSecond = timing.samplesPerSecond;
    s.samplesPerStep = timing.globalSamplesPerStep;
    s.samplesPerRankPerSecond = s.samplesPerSecond / std::max(1, s.ranks);
    s.exposedCommShare = timing.exposedCommShare;
    s.parallelEfficiency = 1 - timing.exposedCommShare;
  } else {
    s.missing.push_back(
        fmt::format("no step timings ({}): step time, throughput and cost are unknown", RunLayout::timingsPattern()));
  }
  if (run.nccl) {
    for (auto t : run.nccl->transports) s.transports.emplace_back(transportClassName(t));
    s.network = run.nccl->network;
  } else {
    s.missing.push_back("no NCCL log: transports unknown (the nccl backend under ddprun --profile writes one)");
  }
  if (auto largest = largestAllreduceBusbw(run)) std::tie(s.busbwBytes, s.busbwGbps) = *largest;
  if (s.pricePerHour) {
    s.costPerHour = *s.pricePerHour * s.instances;
    if (s.timed && s.samplesPerSecond > 0) s.costPerMillionSamples = *s.costPerHour / (s.samplesPerSecond * 3600) * 1e6;
  }
  return s;
}

std::string money(const std::optional<double>& x) { return x ? fmt::format("{:.4g}", *x) : "-"; }
std::string join(const std::vector<std::string>& items, const char* empty = "-") {
  if (items.empty()) return empty;
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string findingList(const std::vector<Finding>& findings) {
  std::vector<std::string> kinds;
  for (const auto& f : findings)
    if (f.severity != Severity::kInfo)
      kinds.push_back(fmt::format("{} ({})", findingKindName(f.kind), severityName(f.severity)));
  return join(kinds, "none");
}

struct Row {
  std::string metric, a, b;
};

// The one table every format shows.
std::vector<Row> rows(const Comparison& c) {
  std::vector<Row> out;
  auto add = [&](std::string metric, auto value) { out.push_back({std::move(metric), value(c.a), value(c.b)}); };
  add("run directory", [](const RunSummary& s) { return s.dir; });
  add("instance", [](const RunSummary& s) { return s.instance ? describe(*s.instance) : std::string("-"); });
  add("ranks", [](const RunSummary& s) { return std::to_string(s.ranks); });
  add("hosts", [](const RunSummary& s) { return fmt::format("{} ({})", s.instances, join(s.hosts)); });
  add("backend", [](const RunSummary& s) { return s.backend.empty() ? std::string("-") : s.backend; });
  add("transports", [](const RunSummary& s) {
    return join(s.transports) + (s.network ? fmt::format("; network {}", *s.network) : "");
  });
  auto timed = [](auto f) { return [f](const RunSummary& s) { return s.timed ? f(s) : std::string("-"); }; };
  add("step time (median)", timed([](const RunSummary& s) { return fmt::format("{:.2f} ms", s.stepMs); }));
  add("samples per step", timed([](const RunSummary& s) { return std::to_string(s.samplesPerStep); }));
  add("throughput", timed([](const RunSummary& s) { return fmt::format("{:.1f} samples/s", s.samplesPerSecond); }));
  add("per rank",
      timed([](const RunSummary& s) { return fmt::format("{:.1f} samples/s", s.samplesPerRankPerSecond); }));
  add("exposed communication", timed([](const RunSummary& s) { return percent(s.exposedCommShare); }));
  add("parallel efficiency", timed([](const RunSummary& s) { return percent(s.parallelEfficiency); }));
  add("allreduce busbw (ddpbench)", [](const RunSummary& s) {
    return s.busbwGbps ? fmt::format("{:.3g} GB/s at {} B", *s.busbwGbps, s.busbwBytes) : std::string("-");
  });
  add("findings", [](const RunSummary& s) { return findingList(s.findings); });
  add("price per instance-hour", [](const RunSummary& s) { return money(s.pricePerHour); });
  add("cost per hour", [](const RunSummary& s) {
    return s.costPerHour
               ? fmt::format("{} ({} instance{})", money(s.costPerHour), s.instances, s.instances == 1 ? "" : "s")
               : std::string("-");
  });
  add("cost per 1 M samples", [](const RunSummary& s) { return money(s.costPerMillionSamples); });
  if (c.datasetSize) {
    add(fmt::format("epoch of {} samples", *c.datasetSize), [](const RunSummary& s) {
      return s.epochHours ? fmt::format("{:.3g} h, cost {}", *s.epochHours, money(s.costPerEpoch)) : std::string("-");
    });
  }
  for (size_t i = 0; i < c.projectTo.size(); ++i) {
    auto projected = [i](auto f) {
      return [i, f](const RunSummary& s) { return s.projection ? f(s.projection->targets[i]) : std::string("-"); };
    };
    const std::string onto = "projected onto " + c.projectTo[i];
    add(onto + ": step time", projected([](const Projection& p) {
          return fmt::format("{:.2f} ms ({:.2f} compute + {:.2f} exposed)", p.stepMs, p.computeMs, p.exposedMs);
        }));
    add(onto + ": throughput", projected([](const Projection& p) {
          return fmt::format("{:.1f} samples/s on {} ranks", p.samplesPerSecond, p.ranks);
        }));
  }
  return out;
}

json summaryJson(const RunSummary& s) {
  auto opt = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  json findings = json::array();
  for (const auto& f : s.findings)
    findings.push_back(
        {{"kind", findingKindName(f.kind)}, {"severity", severityName(f.severity)}, {"evidence", f.evidence}});
  return {{"run_dir", s.dir},
          {"label", s.label},
          {"instance", s.instance ? toJson(*s.instance) : json(nullptr)},
          {"ranks", s.ranks},
          {"instances", s.instances},
          {"hosts", s.hosts},
          {"backend", s.backend.empty() ? json(nullptr) : json(s.backend)},
          {"transports", s.transports},
          {"network", s.network ? json(*s.network) : json(nullptr)},
          {"timed", s.timed},
          {"step_ms", s.timed ? json(s.stepMs) : json(nullptr)},
          {"samples_per_step", s.timed ? json(s.samplesPerStep) : json(nullptr)},
          {"samples_per_s", s.timed ? json(s.samplesPerSecond) : json(nullptr)},
          {"samples_per_s_per_rank", s.timed ? json(s.samplesPerRankPerSecond) : json(nullptr)},
          {"exposed_comm_share", s.timed ? json(s.exposedCommShare) : json(nullptr)},
          {"parallel_efficiency", s.timed ? json(s.parallelEfficiency) : json(nullptr)},
          {"busbw_gbps", opt(s.busbwGbps)},
          {"busbw_bytes", s.busbwGbps ? json(s.busbwBytes) : json(nullptr)},
          {"findings", findings},
          {"price_per_instance_hour", opt(s.pricePerHour)},
          {"cost_per_hour", opt(s.costPerHour)},
          {"cost_per_1m_samples", opt(s.costPerMillionSamples)},
          {"epoch_hours", opt(s.epochHours)},
          {"cost_per_epoch", opt(s.costPerEpoch)},
          {"missing", s.missing},
          {"projection", s.projection ? projectionJson(*s.projection) : json(nullptr)}};
}

}  // namespace

double parsePositive(const std::string& text, const std::string& option) {
  const auto value = detail::number(text);
  if (!value) throw ConfigError(fmt::format("{} '{}' is not a number", option, text));
  if (*value <= 0) throw ConfigError(fmt::format("{} {} must be greater than 0", option, text));
  return *value;
}

Comparison compareRuns(const RunData& a, const RunData& b, const CompareOptions& options) {
  if (auto why = notTheSameJob(a, b)) throw ConfigError("these runs are different jobs: " + *why);
  Comparison c{summarise(a, options.a), summarise(b, options.b), options.datasetSize, options.projectTo, {}};
  if (!options.projectTo.empty()) {
    ProjectOptions project;
    project.targets = options.projectTo;
    for (auto [run, s] : {std::make_pair(&a, &c.a), std::make_pair(&b, &c.b)}) {
      if (auto why = whyNotProjectable(*run))
        s->missing.push_back(fmt::format("no projection: {}", *why));
      else
        s->projection = projectRun(*run, project);  // what it throws now is about a target: exit 2
    }
  }
  if (!c.a.timed && !c.b.timed && c.a.transports.empty() && c.b.transports.empty())
    throw ConfigError(
        fmt::format("nothing to compare: neither {} nor {} has step timings or an NCCL log", a.dir, b.dir));
  for (auto* s : {&c.a, &c.b}) {
    if (c.datasetSize && s->timed && s->samplesPerSecond > 0) {
      s->epochHours = static_cast<double>(*c.datasetSize) / s->samplesPerSecond / 3600;
      if (s->costPerHour) s->costPerEpoch = *s->epochHours * *s->costPerHour;
    }
    if (!s->pricePerHour) s->missing.push_back("no price (--price-a/--price-b): cost unknown");
  }
  auto& v = c.verdict;
  if (c.a.timed && c.b.timed && c.a.samplesPerSecond > 0 && c.b.samplesPerSecond > 0) {
    const bool bFaster = c.b.samplesPerSecond > c.a.samplesPerSecond;
    const auto& fast = bFaster ? c.b : c.a;
    const auto& slow = bFaster ? c.a : c.b;
    v.push_back(fmt::format("{} trains {:.2f}x faster ({:.1f} against {:.1f} samples/s).", fast.label,
                            fast.samplesPerSecond / slow.samplesPerSecond, fast.samplesPerSecond,
                            slow.samplesPerSecond));
    if (c.a.ranks != c.b.ranks || c.a.instances != c.b.instances ||
        std::abs(c.a.samplesPerRankPerSecond - c.b.samplesPerRankPerSecond) > 0.05 * c.a.samplesPerRankPerSecond) {
      const bool bAhead = c.b.samplesPerRankPerSecond > c.a.samplesPerRankPerSecond;
      const auto& ahead = bAhead ? c.b : c.a;
      const auto& behind = bAhead ? c.a : c.b;
      v.push_back(fmt::format(
          "Per rank, {} does {:.1f} samples/s and {} {:.1f}: {} keeps {:.0f} % of {}'s per-rank throughput.", c.a.label,
          c.a.samplesPerRankPerSecond, c.b.label, c.b.samplesPerRankPerSecond, behind.label,
          100 * behind.samplesPerRankPerSecond / ahead.samplesPerRankPerSecond, ahead.label));
    }
    if (std::abs(c.a.exposedCommShare - c.b.exposedCommShare) >= 0.05)
      v.push_back(fmt::format("Exposed communication: {} {}, {} {} of the step.", c.a.label,
                              percent(c.a.exposedCommShare), c.b.label, percent(c.b.exposedCommShare)));
  }
  if (c.a.costPerMillionSamples && c.b.costPerMillionSamples) {
    const bool bCheaper = *c.b.costPerMillionSamples < *c.a.costPerMillionSamples;
    const auto& cheap = bCheaper ? c.b : c.a;
    const auto& dear = bCheaper ? c.a : c.b;
    v.push_back(fmt::format("{} is {:.2f}x cheaper per sample: {} against {} per 1 M samples{}.", cheap.label,
                            *dear.costPerMillionSamples / *cheap.costPerMillionSamples,
                            money(cheap.costPerMillionSamples), money(dear.costPerMillionSamples),
                            cheap.costPerHour && dear.costPerHour && *cheap.costPerHour > *dear.costPerHour
                                ? " although it costs more per hour"
                                : ""));
  } else if (c.a.timed && c.b.timed) {
    v.push_back("Give --price-a and --price-b (per instance-hour) for the cost per sample.");
  }
  return c;
}

json compareJson(const Comparison& c) {
  return {{"a", summaryJson(c.a)},
          {"b", summaryJson(c.b)},
          {"dataset_size", c.datasetSize ? json(*c.datasetSize) : json(nullptr)},
          {"verdict", c.verdict}};
}

std::string renderCompareText(const Comparison& c) {
  const auto table = rows(c);
  size_t w0 = 6, w1 = c.a.label.size(), w2 = c.b.label.size();
  for (const auto& r : table) {
    w0 = std::max(w0, r.metric.size());
    w1 = std::max(w1, r.a.size());
    w2 = std::max(w2, r.b.size());
  }
  std::string out = fmt::format("ddprof compare: {} (A) against {} (B)\n\n", c.a.label, c.b.label);
  out += fmt::format("{:<{}}  {:<{}}  {}\n", "", w0, c.a.label, w1, c.b.label);
  for (const auto& r : table) out += fmt::format("{:<{}}  {:<{}}  {}\n", r.metric, w0, r.a, w1, r.b);
  if (!c.verdict.empty()) out += "\n";
  for (const auto& v : c.verdict) out += v + "\n";
  for (const auto* s : {&c.a, &c.b})
    for (const auto& m : s->missing) out += fmt::format("missing in {}: {}\n", s->label, m);
  return out;
}

std::string renderCompareMarkdown(const Comparison& c) {
  std::string out = fmt::format("# ddprof compare: {} (A) against {} (B)\n\n| | {} | {} |\n|---|---|---|\n", c.a.label,
                                c.b.label, c.a.label, c.b.label);
  for (const auto& r : rows(c)) out += fmt::format("| {} | {} | {} |\n", r.metric, r.a, r.b);
  if (!c.verdict.empty()) {
    out += "\n";
    for (const auto& v : c.verdict) out += "- " + v + "\n";
  }
  for (const auto* s : {&c.a, &c.b})
    for (const auto& m : s->missing) out += fmt::format("\n*Missing in {}:* {}\n", s->label, m);
  return out;
}

std::string renderCompareHtml(const Comparison& c) {
  html::Page page(fmt::format("ddprof compare: {} against {}", c.a.label, c.b.label));
  page.heading(1, fmt::format("{} (A) against {} (B)", c.a.label, c.b.label));
  std::string verdict;
  for (const auto& v : c.verdict) verdict += "<li>" + html::escape(v) + "</li>";
  if (!verdict.empty()) page.raw("<ul class=\"verdict\">" + verdict + "</ul>");
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows(c)) cells.push_back({r.metric, r.a, r.b});
  page.table({"", c.a.label, c.b.label}, cells);
  if (c.a.timed && c.b.timed) {
    page.heading(2, "Throughput and cost");
    page.raw(html::barChart("samples/s", {{c.a.label, c.a.samplesPerSecond}, {c.b.label, c.b.samplesPerSecond}},
                            "samples/s"));
    if (c.a.costPerMillionSamples && c.b.costPerMillionSamples)
      page.raw(html::barChart("cost per 1 M samples",
                              {{c.a.label, *c.a.costPerMillionSamples}, {c.b.label, *c.b.costPerMillionSamples}}, ""));
  }
  for (const auto* s : {&c.a, &c.b})
    if (s->projection) {
      page.heading(2, fmt::format("{} projected", s->label));
      page.raw(projectionChart(*s->projection));
    }
  for (const auto* s : {&c.a, &c.b})
    for (const auto& m : s->missing) page.paragraph(fmt::format("Missing in {}: {}", s->label, m));
  return page.finish();
}

}  // namespace ddp::profiler
