#include "render/report_parts.hpp"

#include "ddp/common/run_layout.hpp"
#include "ddp/common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ddp::profiler::parts {

std::string rankSuffix(const Finding& f) {
  if (!f.hosts.empty())
    return (f.hosts.size() == 1 ? " (host " : " (hosts ") + fmt::format("{}", fmt::join(f.hosts, ", ")) + ")";
  if (f.ranks.empty()) return "";
  return (f.ranks.size() == 1 ? " (rank " : " (ranks ") + rankList(f.ranks) + ")";
}

namespace {

std::string partLabel(const LostTime& l, StepPart p) {
  switch (p) {
    case StepPart::kPeerWait:
      if (l.pattern == LatePattern::kPersistent)
        return fmt::format("waiting for late peers (persistent: rank {})", l.lateRank);
      if (l.pattern == LatePattern::kBursts)
        return fmt::format("waiting for late peers (in bursts, rank {} late in most)", l.lateRank);
      if (l.pattern == LatePattern::kRotating) return "waiting for late peers (rotating: no rank is slow on average)";
      return "waiting for late peers";
    case StepPart::kCpuWait:
      return "waiting for a CPU";
    case StepPart::kTransfer:
      return "transfer";
    case StepPart::kData:
      return "data";
    case StepPart::kCompute:
      break;
  }
  return std::string(stepPartName(p));
}

}  // namespace

std::string lossSummary(const LostTime& l) {
  std::vector<std::pair<double, StepPart>> parts;
  for (StepPart p : kStepParts)
    if (p != StepPart::kCompute) parts.emplace_back(l.lostMs[p], p);
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [ms, p] : parts)
    if (l.share(ms) >= 0.005)
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", percent(l.share(ms), 0), partLabel(l, p));
  return fmt::format("{} of the run is lost{}", percent(l.share(l.lostTotalMs()), 0), out.empty() ? "" : ": " + out);
}

std::string accountingSummary(const LostTime& l) {
  if (l.steps == 0) return "";
  const double n = static_cast<double>(l.steps);
  std::string out = fmt::format(
      "where the time went: ideal step {:.2f} ms (compute {:.2f}, the transfer the link needs {:.2f}{}) -> measured "
      "{:.2f} ms; lost {:.2f} ms a step:",
      l.idealMs / n, l.idealComputeMs / n, l.idealTransferMs / n,
      l.linkBusbwGbps ? fmt::format(" at {:.3g} GB/s, {}", *l.linkBusbwGbps, l.linkSource) : "", l.measuredMs / n,
      l.lostTotalMs() / n);
  for (StepPart p : kStepParts)
    if (p != StepPart::kCompute) out += fmt::format(" {} {:.2f}", stepPartName(p), l.lostMs[p] / n);
  const double peer = l.lostMs[StepPart::kPeerWait];
  if (peer > 0) {
    std::string who;
    for (const auto& a : l.ranks)
      if (a.causedPeerWaitMs >= 0.1 * peer)
        who += fmt::format("{}rank {} {} (late in {} steps)", who.empty() ? "" : ", ", a.rank,
                           percent(a.causedPeerWaitMs / peer, 0), a.lateSteps);
    out += fmt::format("; the waits for late peers were caused by {}", who);
  }
  return out;
}

std::string verdict(const Report& r) {
  const auto& t = r.timing;
  auto problem = std::find_if(r.findings.begin(), r.findings.end(),
                              [](const Finding& f) { return f.severity != Severity::kInfo; });
  const bool failure = problem != r.findings.end() && isFailure(problem->kind);
  const std::string loss = t.stepsAnalysed > 0 && !failure ? lossSummary(t.lost) + "; " : "";
  if (problem != r.findings.end())
    return fmt::format("{}fix first: {}{}, {} confidence: {}", loss, findingKindName(problem->kind),
                       rankSuffix(*problem), confidenceName(problem->confidence), problem->fix);
  if (t.stepsAnalysed == 0) return "not measured: " + notMeasured(r);
  const double computing = 1 - t.exposedCommShare - t.phaseShare[Phase::kData];
  return fmt::format(
      "healthy: {} (under {}); the ranks compute {} of each step, wait {} on communication and {} on data, at {:.1f} "
      "samples/s",
      lossSummary(t.lost), percent(kHealthyLossShare, 0), percent(std::max(0.0, computing), 0),
      percent(t.exposedCommShare, 0), percent(t.phaseShare[Phase::kData], 0), t.samplesPerSecond);
}

std::string stepSummary(const TimingAnalysis& t) {
  return fmt::format(
      "{} ranks, {} steps analysed{}; step {:.2f} ms median, {:.2f} ms p95; {:.1f} samples/s ({} samples per step)",
      t.ranks.size(), t.stepsAnalysed, t.warmupSkipped ? " (first skipped as warm-up)" : "", t.stepMsMedian,
      t.stepMsP95, t.samplesPerSecond, t.globalSamplesPerStep);
}

std::string phaseSummary(const TimingAnalysis& t) {
  std::string out = "phases (mean share of a step):";
  for (Phase p : kPhases) out += fmt::format(" {} {}", phaseName(p), percent(t.phaseShare[p]));
  return out;
}

std::string commSummary(const TimingAnalysis& t) {
  return fmt::format(
      "communication: {:.2f} ms per step in flight{}; exposed {} of the step: the transfer {}, waiting for later "
      "ranks {}{}; imbalance {:.2f} (slowest/mean compute)",
      t.commMsMean, t.overlapFraction ? fmt::format(", {} hidden behind backward", percent(*t.overlapFraction)) : "",
      percent(t.exposedCommShare), percent(t.transferShare), percent(t.peerWaitShare),
      t.allreduceBusbwGbps ? fmt::format("; gradient allreduces at {:.3g} GB/s bus bandwidth", *t.allreduceBusbwGbps)
                           : "",
      t.imbalanceRun);
}

std::string linkSummary(const TimingAnalysis& t) {
  std::string links;
  for (const auto& l : t.links)
    if (measured(l, t.links))
      links += fmt::format("{}{} → {} {} ({:.1f} MiB)", links.empty() ? "" : ", ", l.from, l.to,
                           formatRate(l.mbitPerS()), l.sentMib);
  if (links.empty()) return "";
  return "links between hosts (what their TCP connections delivered while sending): " + links;
}

std::string stallSummary(const TimingAnalysis& t) {
  if (t.stalls.empty()) return "";
  double lo = 1e300, hi = 0;
  std::string steps;
  for (size_t i = 0; i < t.stalls.size(); ++i) {
    lo = std::min(lo, t.stalls[i].stepMs);
    hi = std::max(hi, t.stalls[i].stepMs);
    if (i < 8) steps += (steps.empty() ? "" : ", ") + std::to_string(t.stalls[i].step);
  }
  return fmt::format(
      "stalls: {} step(s) above {:.0f}× the median took {:.0f}–{:.0f} ms ({:.1f} s beyond the median; "
      "steps {}{})",
      t.stalls.size(), kStallFactor, lo, hi, t.stallExcessMs / 1e3, steps, t.stalls.size() > 8 ? ", ..." : "");
}

namespace {

// "ranks 0-1" / "rank 3"
std::string whichRanks(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rankList(ranks);
}

std::string sourceName(const TimingSource& s) {
  if (s.source == "cpp") return "the C++ step timer (ddp::StepTimer)";
  if (s.source == "python-auto") return "ddprun's automatic PyTorch instrumentation";
  if (s.source == "python-api") return "the ddprun.step() API";
  return "'" + s.source + "'";
}

}  // namespace

std::vector<std::string> sourceLines(const Report& r) {
  std::map<std::string, std::vector<int>> measured, notes;
  for (const auto& [rank, s] : r.run.sources) {
    if (!s.instrumented) continue;
    measured[sourceName(s) + (s.runtime.empty() || s.source == "cpp" ? "" : ", " + s.runtime) +
             (s.device.empty() ? "" : ", " + s.device)]
        .push_back(rank);
    for (const auto& n : s.notes) notes[n].push_back(rank);
  }
  std::vector<std::string> out;
  for (const auto& [what, ranks] : measured) out.push_back(fmt::format("timings: {} on {}", what, whichRanks(ranks)));
  for (const auto& [note, ranks] : notes) out.push_back(fmt::format("note ({}): {}", whichRanks(ranks), note));
  return out;
}

std::string notMeasured(const Report& r) {
  if (r.timing.stepsAnalysed > 0) return "";
  std::map<std::string, std::vector<int>> reasons;
  for (const auto& [rank, s] : r.run.sources)
    if (!s.instrumented) reasons[s.reason.empty() ? "no reason given" : s.reason].push_back(rank);
  if (r.run.timings.empty() && !reasons.empty()) {
    std::string why;
    for (const auto& [reason, ranks] : reasons)
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", whichRanks(ranks), reason);
    return fmt::format(
        "no step timings: the Python instrumentation could not follow the program ({}), so step time, phases, "
        "throughput, imbalance and stragglers were not measured; mark the steps with ddprun.step() "
        "(docs/python.md)",
        why);
  }
  if (r.run.timings.empty())
    return fmt::format(
        "no step timings ({} is empty): the program wrote none (a LibTorch loop without "
        "ddp::StepTimer, or a Python script run without --profile), so step time, phases, "
        "throughput, imbalance and stragglers were not measured",
        RunLayout::timingsPattern());
  return "the ranks' timings share no step (each rank recorded different steps), so nothing could be compared";
}

Table rankTable(const TimingAnalysis& t) {
  Table table{{"rank", "steps", "step ms", "compute ms", "data ms", "comm_wait ms", "peer wait ms", "comm ms (mean)",
               "slowest in", "stalls"},
              {}};
  for (const auto& r : t.ranks)
    table.rows.push_back(
        {std::to_string(r.rank), std::to_string(r.steps), fmt::format("{:.2f}", r.stepMsMedian),
         fmt::format("{:.2f}", r.computeMsMedian), fmt::format("{:.2f}", r.phaseMsMedian[Phase::kData]),
         fmt::format("{:.2f}", r.phaseMsMedian[Phase::kCommWait]), fmt::format("{:.2f}", r.peerWaitMsMedian),
         fmt::format("{:.2f}", r.commMsMean), percent(r.slowestShare), std::to_string(r.stalls)});
  return table;
}

}  // namespace ddp::profiler::parts
