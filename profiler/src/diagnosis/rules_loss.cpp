// Rules from the lost-time accounting (accounting.hpp, docs/diagnosis.md): the waits for late
// peers by who made them and why (one rank persistently, every rank in turn, a rank short of CPU
// where the others are not), what each finding explains of the loss, and the loss no finding
// explains. A finding here needs size (a share of the run's time) and consistency (over steps).
#include "ddp/common/text.hpp"
#include "diagnosis/rules.hpp"
#include "stats.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::profiler::rules {
namespace {

constexpr double kFindingShare = 0.05;  // of the run's time: the least a finding from the accounting explains
// One rank the others wait for in most steps is said from this share of the run: a warning where
// the run is not healthy (its loss kHealthyLossShare or more), a note where it is (the two vCPUs
// of this machine make pinned ranks of the same job differ by up to 4 %). The persistent pattern
// is the consistency (last in 60 % of the steps; a healthy job's ranks are each last in about
// half); this is only the size, what the fix wins back: a 10 % slower backward on one rank of two
// costs a compute-bound run 2–3 %, and a job that only jitters is never persistent.
constexpr double kPersistentFindingShare = 0.01;
constexpr double kCpuContrastPoints = 0.05;  // a rank's CPU wait this much of its time above the others' ...
constexpr double kCpuContrastRatio = 2.0;    // ... and this many times theirs: short of CPU where they are not
constexpr double kInputCv = 0.1;             // input sizes varying by this much (coefficient of variation) ...
constexpr double kInputCorrelation = 0.5;    // ... with compute following them (Pearson's r): input-dependent work

double cpuWaitShareOf(const RankAccount& a) { return a.stepMs > 0 ? a.ms[StepPart::kCpuWait] / a.stepMs : 0; }

// What a rank's CPU wait costs the run: its own wait (one rank of n in the mean step) and the
// others' wait for it that its CPU wait made.
double cpuLossMs(const LostTime& l, const RankAccount& a) {
  return a.ms[StepPart::kCpuWait] / static_cast<double>(std::max<size_t>(1, l.ranks.size())) + a.causedByCpuWaitMs;
}

// "backward (62 %), forward (20 %)": the phases that made a rank late, by the share of the wait
// they caused, those of a tenth or more.
std::string latePhases(const RankAccount& a) {
  std::vector<std::pair<double, std::string>> parts;
  for (Phase p : kPhases)
    if (a.causedByPhaseMs[p] > 0) parts.emplace_back(a.causedByPhaseMs[p], std::string(phaseName(p)));
  if (a.causedByOtherMs > 0) parts.emplace_back(a.causedByOtherMs, "outside the timed phases");
  std::sort(parts.rbegin(), parts.rend());
  std::string out;
  for (const auto& [ms, name] : parts)
    if (a.causedPeerWaitMs > 0 && ms >= 0.1 * a.causedPeerWaitMs)
      out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", name, percent(ms / a.causedPeerWaitMs, 0));
  return out;
}

std::string lateBucket(const RankAccount& a) {
  if (a.lateAtBucket.empty()) return "";
  const auto top = std::max_element(a.lateAtBucket.begin(), a.lateAtBucket.end(),
                                    [](const auto& x, const auto& y) { return x.second < y.second; });
  return fmt::format(
      "; it fell behind by the launch of gradient bucket {} in {} of its late steps", top->first,
      percent(static_cast<double>(top->second) / static_cast<double>(std::max<size_t>(1, a.lateSteps)), 0));
}

bool names(const Findings& out, FindingKind kind, int rank) {
  return std::any_of(out.begin(), out.end(), [&](const Finding& f) {
    return f.kind == kind && std::find(f.ranks.begin(), f.ranks.end(), rank) != f.ranks.end();
  });
}

// The CPU waits of the ranks other than `rank`: their median share of their time.
double othersCpuWait(const LostTime& l, int rank) {
  std::vector<double> others;
  for (const auto& a : l.ranks)
    if (a.rank != rank) others.push_back(cpuWaitShareOf(a));
  return detail::median(others);
}

}  // namespace

const RankAccount* accountOf(const LostTime& l, int rank) {
  for (const auto& a : l.ranks)
    if (a.rank == rank) return &a;
  return nullptr;
}

// One rank the others wait for in most steps, by a share of the run: a straggler, whatever its
// margin (the timing analysis's straggler needs 30 % more compute; a 10 % slower backward on one
// rank of two costs the run 3 %), with the phase that made it late. Its CPU wait, where that made
// it late and something outside the rank took its CPUs, is cpuContrast's; a wait among its own
// threads (its extra work on the cores it has) stays the straggler's.
void persistentLateRank(const RunData&, const TimingAnalysis& t, Findings& out) {
  const auto& l = t.lost;
  if (l.pattern != LatePattern::kPersistent || t.straggler) return;
  const RankAccount* a = accountOf(l, l.lateRank);
  const double steps = static_cast<double>(std::max<size_t>(1, l.steps));
  if (!a || l.share(a->causedPeerWaitMs) < kPersistentFindingShare ||
      (a->causedByCpuWaitMs >= 0.5 * a->causedPeerWaitMs && outsideTakesCpu(t, a->rank)))
    return;
  const bool warn = l.share(l.lostTotalMs()) >= kHealthyLossShare;
  add(out, FindingKind::kStraggler, warn ? Severity::kWarning : Severity::kInfo, {a->rank},
      fmt::format("rank {} reached the gradient allreduce last in {} of steps, and the others' wait for it is {} of "
                  "the run ({} of the waiting for late peers, {:.2f} ms a step); what made it late: {}{}",
                  a->rank, percent(static_cast<double>(a->lateSteps) / steps, 0),
                  percent(l.share(a->causedPeerWaitMs), 1), percent(l.topLateShare, 0), a->causedPeerWaitMs / steps,
                  latePhases(*a), lateBucket(*a)),
      fmt::format("find what differs on rank {} in the phase that made it late: its configuration (threads, "
                  "precision, a hook or a check only it runs), its data, its core or GPU; every rank waits for the "
                  "slowest at each allreduce",
                  a->rank),
      static_cast<double>(a->lateSteps) / steps >= 0.75 ? Confidence::kHigh : Confidence::kMedium,
      fmt::format("report.html's heat map: rank {}'s row; the per-rank table's phase times", a->rank));
}

// The ranks wait for one another in turn: no rank is slow on average, each step's work differs
// between ranks. With input sizes in the records, whether the compute follows them.
void rotatingLateRanks(const RunData&, const TimingAnalysis& t, Findings& out) {
  const auto& l = t.lost;
  const double peer = l.lostMs[StepPart::kPeerWait];
  const auto& w = l.inputWork;
  const bool inputDependent = w && w->sizeCv >= kInputCv && w->correlation >= kInputCorrelation;
  // Without evidence of a cause, jitter: every rank's steps vary, and ranks that wait in turn for
  // one another's jitter lose a few per cent with nothing to fix.
  if (l.pattern != LatePattern::kRotating || l.share(peer) < (inputDependent ? kFindingShare : kHealthyLossShare))
    return;
  // Ranks late in turn because each waited for a CPU in turn (more ranks or threads than cores)
  // are short of CPU, not given different work: that wait is the CPU findings' (their share holds
  // the peer wait their CPU wait caused).
  double caused = 0, byCpu = 0;
  for (const auto& a : l.ranks) caused += a.causedPeerWaitMs, byCpu += a.causedByCpuWaitMs;
  if (!inputDependent && byCpu >= 0.5 * caused) return;
  std::string spread;
  for (const auto& a : l.ranks)
    spread += fmt::format("{}rank {} {}", spread.empty() ? "" : ", ", a.rank,
                          percent(peer > 0 ? a.causedPeerWaitMs / peer : 0, 0));
  std::string evidence = fmt::format(
      "the ranks waited for late peers {} of the run, and the late rank changes from step to step: no rank is slow on "
      "average (the waits each caused: {})",
      percent(l.share(peer), 1), spread);
  Confidence confidence = Confidence::kMedium;
  std::string fix =
      "make each rank's work per step alike: with variable-length inputs, bucket batches by length or pack them to a "
      "fixed token count per rank; with variable batch sizes, drop_last and equal shards";
  if (inputDependent) {
    evidence += fmt::format(
        "; each step's input size varies between ranks and steps (coefficient of variation {:.2f}) and forward + "
        "backward follow it (r = {:.2f} over {} rank-steps): input-dependent work",
        w->sizeCv, w->correlation, w->points);
    confidence = Confidence::kHigh;
  } else if (w && w->sizeCv >= kInputCv) {
    evidence += fmt::format(
        "; the input size varies (coefficient of variation {:.2f}) but the compute does not follow it (r = {:.2f})",
        w->sizeCv, w->correlation);
    fix =
        "find what makes a rank's step slow in turn (its compute per step in trace.json): work that depends on "
        "the data, an intermittent load on the cores, garbage collection";
    confidence = Confidence::kLow;
  } else if (w) {
    evidence += "; the input size is the same in every step";
    fix =
        "find what makes a rank's step slow in turn (trace.json): work that depends on the values of the data, "
        "an intermittent load on the cores, garbage collection";
    confidence = Confidence::kLow;
  }
  add(out, FindingKind::kVariableWork, Severity::kWarning, {}, evidence, fix, confidence,
      "log each rank's input shape per step (or read input_elems in timings/*.jsonl) beside its compute");
}

// A rank short of CPU where the others are not (its CPU wait a multiple of theirs), that costs the
// run a share of its time, beside no other CPU finding for it: the neighbour that comes and goes
// stays below the run-queue threshold on average but shows against the other ranks.
void cpuContrast(const RunData&, const TimingAnalysis& t, Findings& out) {
  const auto& l = t.lost;
  if (l.ranks.size() < 2) return;
  for (const auto& a : l.ranks) {
    const double own = cpuWaitShareOf(a), theirs = othersCpuWait(l, a.rank);
    if (own - theirs < kCpuContrastPoints || own < kCpuContrastRatio * theirs ||
        l.share(cpuLossMs(l, a)) < kFindingShare || names(out, FindingKind::kCpuContention, a.rank) ||
        names(out, FindingKind::kThreadsOversubscribed, a.rank) || !outsideTakesCpu(t, a.rank))
      continue;
    const RankUtilisation* u = utilisationOf(t, a.rank);
    const std::string others = u ? describeOthers(u->others, "up to ") : "";
    add(out, FindingKind::kCpuContention, Severity::kWarning, {a.rank},
        fmt::format("rank {} waited for a CPU {} of its time against {} on the others, which cost the run {} (its own "
                    "wait and the others' wait for it){}",
                    a.rank, percent(own, 0), percent(theirs, 0), percent(l.share(cpuLossMs(l, a)), 1),
                    others.empty() ? "" : "; outside the job on the host at times: " + others),
        fmt::format("find what runs on rank {}'s cores at times (pidstat 1, top -H on its host: a cron job, a log "
                    "shipper, another job's bursts) and give each rank a core of its own; every rank waits for the "
                    "slowest at each allreduce",
                    a.rank),
        others.empty() ? Confidence::kMedium : Confidence::kHigh,
        fmt::format("pidstat -u 1 on rank {}'s host while it runs: what else takes its CPUs", a.rank));
  }
}

void explainLoss(Findings& findings, const TimingAnalysis& t) {
  const auto& l = t.lost;
  if (l.measuredMs <= 0) return;
  const double exposedTransfer = l.lostMs[StepPart::kTransfer] + l.idealTransferMs;
  // The data wait outside the stalled steps (a rank stopped in its data phase is the stalls'),
  // and the others' wait for a rank its data made late.
  double dataMs = l.lostMs[StepPart::kData] - l.lostInStallsMs[StepPart::kData];
  for (const auto& a : l.ranks) dataMs += a.causedByPhaseMs[Phase::kData];
  for (auto& f : findings) {
    double ms = -1;
    switch (f.kind) {
      case FindingKind::kCpuContention:
      case FindingKind::kThreadsOversubscribed:
        ms = 0;
        for (const auto& a : l.ranks)
          if (f.ranks.empty() || std::count(f.ranks.begin(), f.ranks.end(), a.rank)) ms += cpuLossMs(l, a);
        break;
      case FindingKind::kStalls:
        ms = t.stallExcessMs;
        break;
      case FindingKind::kStraggler:
        if (const RankAccount* a = accountOf(l, f.ranks.empty() ? -1 : f.ranks.front())) ms = a->causedPeerWaitMs;
        break;
      case FindingKind::kDataloaderStarved:
      case FindingKind::kDataBound:
        ms = dataMs;
        break;
      case FindingKind::kCommBound:
      case FindingKind::kSmallBatch:
      case FindingKind::kSocketFallback:
      case FindingKind::kP2pDisabled:
      case FindingKind::kNoGdr:
        ms = exposedTransfer;
        break;
      case FindingKind::kVariableWork:
      case FindingKind::kLoadImbalance:
        ms = l.lostMs[StepPart::kPeerWait];
        break;
      default:
        break;
    }
    if (ms >= 0) f.lostShare = std::min(1.0, l.share(ms));
  }
  // Stalls of a rank that a CPU finding names are that finding's symptom: the CPU finding explains
  // them too (a sample's mean run-queue wait understates the stalled steps'), and comes first.
  for (auto& stall : findings) {
    if (stall.kind != FindingKind::kStalls || stall.ranks.size() != 1 || !stall.lostShare) continue;
    for (auto& cause : findings)
      if ((cause.kind == FindingKind::kCpuContention || cause.kind == FindingKind::kThreadsOversubscribed) &&
          std::count(cause.ranks.begin(), cause.ranks.end(), stall.ranks.front()) && cause.lostShare)
        cause.lostShare = stall.lostShare = std::max(*cause.lostShare, *stall.lostShare);
  }
}

// The loss that the findings do not explain (their shares added up, at most the loss), when that
// alone is the healthy share of the run or more, is a finding of its own: the report never calls
// such a run healthy, and says where the time went.
void unexplainedLoss(Findings& findings, const TimingAnalysis& t) {
  const auto& l = t.lost;
  const double lost = l.share(l.lostTotalMs());
  if (l.steps == 0 || lost < kHealthyLossShare) return;
  double explained = 0;
  for (const auto& f : findings)
    if (f.severity != Severity::kInfo && f.lostShare) explained += *f.lostShare;
  explained = std::min(explained, lost);
  if (lost - explained < kHealthyLossShare) return;
  StepPart largest = StepPart::kPeerWait;
  for (StepPart p : kStepParts)
    if (l.lostMs[p] > l.lostMs[largest]) largest = p;
  const std::string fix =
      largest == StepPart::kPeerWait  ? "find what makes the late ranks late (report.html's heat map, trace.json)"
      : largest == StepPart::kCpuWait ? "give each rank whole cores of its own, with no more busy threads than cores"
      : largest == StepPart::kData ? "load the data ahead of the model: DataLoader workers, prefetching, faster storage"
                                   : "hide the transfer behind backward (smaller first buckets) or use a faster link";
  auto& f = add(findings, FindingKind::kUnexplainedLoss, Severity::kWarning, {},
                fmt::format("{} of the run is lost against the ideal step, {} of it explained by no other finding; "
                            "the largest part is {} ({} of the run)",
                            percent(lost, 0), percent(lost - explained, 0), stepPartName(largest),
                            percent(l.share(l.lostMs[largest]), 1)),
                fix, Confidence::kLow, "report.html: the waterfall and the heat map show where and when");
  f.lostShare = lost - explained;
}

}  // namespace ddp::profiler::rules
