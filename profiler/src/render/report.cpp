#include "ddp/profiler/render/report.hpp"

#include "ddp/common/files.hpp"
#include "ddp/common/json_text.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/common/text.hpp"
#include "ddp/profiler/render/trace.hpp"
#include "render/report_parts.hpp"

#include <fmt/format.h>

namespace ddp::profiler {
namespace {

using nlohmann::json;

template <typename T>
json orNull(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json phasesJson(const PhaseArray<double>& values) {
  json out = json::object();
  for (Phase p : kPhases) out[std::string(phaseName(p))] = values[p];
  return out;
}

json findingsJson(const std::vector<Finding>& findings) {
  json out = json::array();
  for (const auto& f : findings)
    out.push_back({{"kind", findingKindName(f.kind)},
                   {"severity", severityName(f.severity)},
                   {"confidence", confidenceName(f.confidence)},
                   {"ranks", f.ranks},
                   {"hosts", f.hosts},
                   {"evidence", f.evidence},
                   {"fix", f.fix},
                   {"confirm", f.confirm},
                   {"lost_share", orNull(f.lostShare)}});
  return out;
}

json partsJson(const PartArray<double>& values) {
  json out = json::object();
  for (StepPart p : kStepParts) out[std::string(stepPartName(p))] = values[p];
  return out;
}

json lostTimeJson(const LostTime& l) {
  json ranks = json::array();
  for (const auto& a : l.ranks) {
    json byPhase = phasesJson(a.causedByPhaseMs);
    byPhase.erase("comm_wait");
    byPhase["other"] = a.causedByOtherMs;
    json buckets = json::object();
    for (const auto& [bucket, steps] : a.lateAtBucket) buckets[std::to_string(bucket)] = steps;
    ranks.push_back({{"rank", a.rank},
                     {"step_ms", a.stepMs},
                     {"parts_ms", partsJson(a.ms)},
                     {"late_steps", a.lateSteps},
                     {"caused_peer_wait_ms", a.causedPeerWaitMs},
                     {"caused_by_phase_ms", byPhase},
                     {"caused_by_cpu_wait_ms", a.causedByCpuWaitMs},
                     {"late_at_bucket", buckets}});
  }
  json input = nullptr;
  if (l.inputWork)
    input = {
        {"size_cv", l.inputWork->sizeCv}, {"correlation", l.inputWork->correlation}, {"points", l.inputWork->points}};
  return {{"steps", l.steps},
          {"measured_ms", l.measuredMs},
          {"ideal_ms", l.idealMs},
          {"ideal_compute_ms", l.idealComputeMs},
          {"ideal_transfer_ms", l.idealTransferMs},
          {"link_busbw_gbps", orNull(l.linkBusbwGbps)},
          {"link_source", l.linkSource},
          {"lost_ms", partsJson(l.lostMs)},
          {"lost_share", l.share(l.lostTotalMs())},
          {"healthy_below", kHealthyLossShare},
          {"worst_sum_error", l.worstSumError},
          {"late_pattern", latePatternName(l.pattern)},
          {"late_rank", l.lateRank >= 0 ? json(l.lateRank) : json(nullptr)},
          {"top_late_share", l.topLateShare},
          {"burst_share", l.burstShare},
          {"input_work", input},
          {"ranks", ranks}};
}

json ranksJson(const TimingAnalysis& t) {
  json out = json::array();
  for (const auto& rank : t.ranks)
    out.push_back({{"rank", rank.rank},
                   {"steps", rank.steps},
                   {"step_ms_median", rank.stepMsMedian},
                   {"step_ms_p95", rank.stepMsP95},
                   {"compute_ms_median", rank.computeMsMedian},
                   {"phases_ms_mean", phasesJson(rank.phaseMsMean)},
                   {"phases_ms_median", phasesJson(rank.phaseMsMedian)},
                   {"peer_wait_ms_median", rank.peerWaitMsMedian},
                   {"comm_ms_mean", rank.commMsMean},
                   {"samples_per_step", rank.samplesPerStep},
                   {"slowest_share", rank.slowestShare},
                   {"stalls", rank.stalls}});
  return out;
}

json utilisationJson(const TimingAnalysis& t) {
  json out = json::array();
  for (const auto& u : t.utilisation) {
    json others = json::array();
    for (const auto& o : u.others)
      others.push_back({{"pid", o.pid}, {"name", o.name}, {"cpu_pct", o.cpuPct}, {"cpus", o.cpus}});
    out.push_back({{"rank", u.rank},
                   {"samples", u.samples},
                   {"cpu_pct_mean", u.cpuPctMean},
                   {"cpu_pct_max", u.cpuPctMax},
                   {"rss_mib_max", u.rssMibMax},
                   {"run_delay_pct_mean", orNull(u.runDelayPctMean)},
                   {"throttled_pct_mean", orNull(u.throttledPctMean)},
                   {"cpu_quota", orNull(u.cpuQuota)},
                   {"preempted_per_s_mean", orNull(u.preemptedPerSMean)},
                   {"busy_threads_mean", orNull(u.busyThreadsMean)},
                   {"cpus", orNull(u.cpus)},
                   {"stopped_samples", u.stoppedSamples},
                   {"helpers_mean", orNull(u.helpersMean)},
                   {"helpers_cpu_pct_mean", orNull(u.helpersCpuPctMean)},
                   {"helpers_in_io_mean", orNull(u.helpersInIoMean)},
                   {"helpers_delay_pct_mean", orNull(u.helpersDelayPctMean)},
                   {"host_cpus", orNull(u.hostCpus)},
                   {"host_busy_pct_mean", orNull(u.hostBusyPctMean)},
                   {"steal_pct_mean", orNull(u.stealPctMean)},
                   {"load1_mean", orNull(u.load1Mean)},
                   {"others", others},
                   {"gpu_util_pct_mean", orNull(u.gpuUtilPctMean)},
                   {"gpu_mem_used_mib_max", orNull(u.gpuMemUsedMibMax)},
                   {"gpu_sm_clock_mhz_mean", orNull(u.gpuSmClockMhzMean)},
                   {"gpu_sm_clock_max_mhz", orNull(u.gpuSmClockMaxMhz)},
                   {"gpu_throttle_samples", u.gpuThrottle}});
  }
  return out;
}

json linksJson(const std::vector<HostLink>& links) {
  json out = json::array();
  for (const auto& l : links)
    out.push_back({{"from", l.from},
                   {"to", l.to},
                   {"sent_mib", l.sentMib},
                   {"sending_ms", l.sendingMs},
                   {"mbit_per_s", l.mbitPerS()},
                   {"measured", measured(l, links)}});
  return out;
}

json timingJson(const TimingAnalysis& t) {
  json straggler = nullptr;
  if (t.straggler)
    straggler = {{"rank", t.straggler->rank},
                 {"slowest_share", t.straggler->slowestShare},
                 {"extra_compute_ms", t.straggler->extraComputeMs},
                 {"others_wait_ms", t.straggler->othersWaitMs}};
  json stalls = json::array();
  for (const auto& s : t.stalls)
    stalls.push_back({{"step", s.step},
                      {"step_ms", s.stepMs},
                      {"rank", s.rank},
                      {"phase", phaseName(s.phase)},
                      {"stopped", s.stopped}});
  return {{"steps",
           {{"analysed", t.stepsAnalysed},
            {"max_recorded", t.maxSteps},
            {"warmup_skipped", t.warmupSkipped},
            {"step_ms_median", t.stepMsMedian},
            {"step_ms_p95", t.stepMsP95},
            {"run_ms", t.runMs}}},
          {"scaling",
           {{"ranks", t.ranks.size()},
            {"samples_per_step", t.globalSamplesPerStep},
            {"samples_per_s", t.samplesPerSecond}}},
          {"phases", phasesJson(t.phaseShare)},
          {"lost_time", lostTimeJson(t.lost)},
          {"communication",
           {{"exposed_share", t.exposedCommShare},
            {"transfer_share", t.transferShare},
            {"peer_wait_share", t.peerWaitShare},
            {"comm_ms_mean", t.commMsMean},
            {"overlap_fraction", orNull(t.overlapFraction)},
            {"allreduce_busbw_gbps", orNull(t.allreduceBusbwGbps)},
            {"allreduce_bytes_per_step", t.allreduceBytesPerStep},
            {"links", linksJson(t.links)}}},
          {"imbalance",
           {{"run", t.imbalanceRun},
            {"step_median", t.imbalanceStepMedian},
            {"step_max", t.imbalanceStepMax},
            {"straggler", straggler}}},
          {"stalls", {{"steps", stalls}, {"excess_ms", t.stallExcessMs}}},
          {"ranks", ranksJson(t)},
          {"step_matrix", {{"steps", t.matrixSteps}, {"step_ms", t.stepMatrix}}},
          {"missing_ranks", t.missingRanks},
          {"short_ranks", t.shortRanks},
          {"utilisation", utilisationJson(t)}};
}

// Columns padded to their widest cell, numbers right-aligned.
std::string textTable(const parts::Table& table) {
  std::vector<size_t> width(table.header.size());
  for (size_t i = 0; i < width.size(); ++i) {
    width[i] = table.header[i].size();
    for (const auto& row : table.rows) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) out += fmt::format("{}{:>{}}", i ? "  " : "", cells[i], width[i]);
    return out + "\n";
  };
  std::string out = line(table.header);
  for (const auto& row : table.rows) out += line(row);
  return out;
}

}  // namespace

json reportJson(const Report& r) {
  json out = {{"run_dir", r.run.dir},
              {"world_size", orNull(r.run.worldSize)},
              {"verdict", parts::verdict(r)},
              {"not_measured", r.timing.stepsAnalysed > 0 ? json(nullptr) : json(parts::notMeasured(r))},
              {"findings", findingsJson(r.findings)}};
  out.update(timingJson(r.timing));
  json exits = json::array();
  for (const auto& e : r.run.exits)
    exits.push_back(
        {{"rank", e.rank}, {"exit_code", orNull(e.exitCode)}, {"signal", orNull(e.signal)}, {"failed", e.failed()}});
  out["exits"] = exits;
  out["nccl"] = r.run.nccl ? toJson(*r.run.nccl) : json(nullptr);
  out["problems"] = r.run.problems;
  json sources = json::array();
  for (const auto& [rank, s] : r.run.sources) sources.push_back(toJson(s));
  out["timings_sources"] = sources;
  if (r.projection) out["projection"] = projectionJson(*r.projection);
  return out;
}

std::string renderReportText(const Report& r) {
  const auto& t = r.timing;
  std::string out = fmt::format("verdict: {}\nddprof report: {}\n", parts::verdict(r), r.run.dir);
  if (t.stepsAnalysed > 0) {
    out += parts::accountingSummary(t.lost) + "\n" + parts::stepSummary(t) + "\n" + parts::phaseSummary(t) + "\n" +
           parts::commSummary(t) + "\n";
    if (const auto links = parts::linkSummary(t); !links.empty()) out += links + "\n";
    if (const auto stalls = parts::stallSummary(t); !stalls.empty()) out += stalls + "\n";
  } else {
    out += "not measured: " + parts::notMeasured(r) + "\n";
  }
  for (const auto& line : parts::sourceLines(r)) out += line + "\n";
  out += "\nfindings (the first is the one to fix first):\n";
  if (r.findings.empty()) out += "  none\n";
  for (const auto& f : r.findings) {
    out +=
        fmt::format("  [{}, {} confidence] {}{}{}: {}\n", severityName(f.severity), confidenceName(f.confidence),
                    findingKindName(f.kind), parts::rankSuffix(f),
                    f.lostShare ? fmt::format(", explains {} of the run", percent(*f.lostShare, 1)) : "", f.evidence);
    out += fmt::format("      fix: {}\n      to confirm: {}\n", f.fix, f.confirm);
  }
  if (!t.ranks.empty()) out += "\nper rank (medians over the analysed steps):\n" + textTable(parts::rankTable(t));
  if (!t.shortRanks.empty())
    out += fmt::format("ranks with fewer steps than the longest ({}): {}\n", t.maxSteps, rankList(t.shortRanks));
  if (r.run.nccl) out += "\nNCCL\n" + renderNcclSummary(*r.run.nccl);
  if (r.projection) out += "\n" + renderProjectionText(*r.projection);
  if (!r.run.problems.empty()) {
    out += "\nproblems reading the run directory:\n";
    for (const auto& p : r.run.problems) out += "  " + p + "\n";
  }
  return out;
}

std::string renderReportMarkdown(const Report& r) {
  const auto& t = r.timing;
  std::string out =
      fmt::format("# ddprof report: `{}`\n\n**Verdict:** {}\n\n## Findings\n\n", r.run.dir, parts::verdict(r));
  if (r.findings.empty()) out += "No rule found a problem.\n";
  for (const auto& f : r.findings)
    out += fmt::format("- **{}** `{}`{} ({} confidence) — {}  \n  *Fix:* {}  \n  *To confirm:* {}\n",
                       severityName(f.severity), findingKindName(f.kind), parts::rankSuffix(f),
                       confidenceName(f.confidence), f.evidence, f.fix, f.confirm);
  if (t.stepsAnalysed > 0) {
    out += fmt::format("\n## Steps\n\n{}.  \n{}.  \n{}.\n", parts::stepSummary(t), parts::phaseSummary(t),
                       parts::commSummary(t));
    if (const auto links = parts::linkSummary(t); !links.empty()) out += links + ".  \n";
    if (const auto stalls = parts::stallSummary(t); !stalls.empty()) out += stalls + ".\n";
    const auto table = parts::rankTable(t);
    out += "\nPer rank, medians over the analysed steps:\n\n|";
    for (const auto& h : table.header) out += " " + h + " |";
    out += "\n|";
    for (size_t i = 0; i < table.header.size(); ++i) out += "---:|";
    out += "\n";
    for (const auto& row : table.rows) {
      out += "|";
      for (const auto& c : row) out += " " + c + " |";
      out += "\n";
    }
  } else {
    out += "\n## Not measured\n\n" + parts::notMeasured(r) + "\n";
  }
  for (const auto& line : parts::sourceLines(r)) out += "\n" + line + "  ";
  if (!r.run.sources.empty()) out += "\n";
  if (r.run.nccl) out += "\n## NCCL\n\n```\n" + renderNcclSummary(*r.run.nccl) + "```\n";
  if (r.projection) out += "\n#" + renderProjectionMarkdown(*r.projection);  // its title one level down
  if (!r.run.problems.empty()) {
    out += "\n## Problems reading the run directory\n\n";
    for (const auto& p : r.run.problems) out += "- " + p + "\n";
  }
  return out;
}

RenderedReport reportRun(const std::string& dir, bool write, const std::vector<std::string>& projectTo) {
  const RunLayout layout(dir);
  auto run = loadRun(dir);
  auto timing = analyseTimings(run);
  auto findings = diagnose(run, timing);
  std::optional<ProjectionReport> projection;
  if (!projectTo.empty()) {
    ProjectOptions options;
    options.targets = projectTo;
    projection = projectRun(run, options);
  }
  Report report{run, timing, findings, projection ? &*projection : nullptr};
  RenderedReport out{renderReportText(report),
                     jsonText(reportJson(report), 2) + "\n",
                     renderReportMarkdown(report),
                     renderReportHtml(report),
                     run.problems,
                     timing.stepsAnalysed > 0 || run.nccl || !run.exits.empty()};
  if (write) {
    writeFileAtomically(layout.report(ReportFile::kText), out.text);
    writeFileAtomically(layout.report(ReportFile::kJson), out.json);
    writeFileAtomically(layout.report(ReportFile::kMarkdown), out.markdown);
    writeFileAtomically(layout.report(ReportFile::kHtml), out.html);
    if (!run.timings.empty()) writeFileAtomically(layout.report(ReportFile::kTrace), traceText(run));
  }
  return out;
}

}  // namespace ddp::profiler
