// Rules on how the ranks ended: failures and their collateral, restarts, ranks without timings.
#include "ddp/common/run_layout.hpp"
#include "ddp/common/text.hpp"
#include "diagnosis/rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>

namespace ddp::profiler::rules {
namespace {

constexpr int kSigKill = 9;

}  // namespace

Finding& add(Findings& out, FindingKind kind, Severity severity, std::vector<int> ranks, std::string evidence,
             std::string fix, Confidence confidence, std::string confirm) {
  out.push_back({kind,
                 severity,
                 std::move(ranks),
                 std::move(evidence),
                 std::move(fix),
                 confidence,
                 std::move(confirm),
                 std::nullopt,
                 {}});
  return out.back();
}

std::map<std::string, std::vector<int>> ranksByHost(const RunData& run, const TimingAnalysis& t) {
  std::map<int, std::string> hostOf;
  for (const auto& e : run.exits) hostOf[e.rank] = e.host;
  std::map<std::string, std::vector<int>> out;
  std::vector<int> ranks;
  for (const auto& r : t.ranks) ranks.push_back(r.rank);
  for (const auto& u : t.utilisation)
    if (std::find(ranks.begin(), ranks.end(), u.rank) == ranks.end()) ranks.push_back(u.rank);
  for (int r : ranks) out[hostOf.count(r) ? hostOf[r] : ""].push_back(r);
  return out;
}

namespace {

// The innermost frames of the main thread's Python stack in a stacks file (py-spy dump's
// "Thread N (state): "MainThread"" section), innermost first; empty without one.
std::vector<std::string> pythonFrames(const std::string& path, size_t most) {
  std::vector<std::string> frames;
  std::ifstream in(path);
  bool inMain = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Thread ", 0) == 0) {
      if (inMain) break;
      inMain = line.find("\"MainThread\"") != std::string::npos;
      continue;
    }
    if (!inMain) continue;
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) break;
    if (frames.size() < most) frames.push_back(line.substr(first));
  }
  return frames;
}

// A rank the hang watchdog named: where its Python code was (py-spy's stack in the stacks file the
// launcher wrote), and where to read the rest.
void hungRank(const RunData& run, const RankExitRecord& e, Findings& out) {
  const RunLayout layout(run.dir);
  const std::string path = layout.rankStacks(e.rank);
  const auto frames = pythonFrames(path, 6);
  add(out, FindingKind::kRankHung, Severity::kCritical, {e.rank},
      fmt::format("rank {}{} hung: no step completed anywhere within --timeout, and the launcher named it{}", e.rank,
                  e.host.empty() ? "" : " on " + e.host,
                  frames.empty() ? fmt::format("; its stacks: {}", path)
                                 : fmt::format("; its Python stack (innermost first): {}", fmt::join(frames, " <- "))),
      frames.empty()
          ? fmt::format("read its stacks ({}): the innermost frames of the training thread are where it waits", path)
          : fmt::format("look at {} first: the rank waits there; the native stacks beside it are in {}", frames.front(),
                        path),
      Confidence::kHigh, "less " + path);
}

}  // namespace

// Ranks that failed on their own: the launcher's culprit first; the ranks it stopped after
// that are collateral, named in one finding.
void failedRanks(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (run.lostHost) {
    std::vector<int> there;
    bool neverUp = true;  // no worker there ever said hello to the launcher
    for (const auto& e : run.exits)
      if (e.host == *run.lostHost) there.push_back(e.rank), neverUp = neverUp && e.workerPid <= 0;
    add(out, FindingKind::kHostLost, Severity::kCritical, there,
        neverUp ? fmt::format("host {} never came up: none of its ranks ({}) reached the launcher (the host is down "
                              "or unreachable, or the launcher could not start them there)",
                              *run.lostHost, rankList(there))
                : fmt::format("host {} was lost: rank(s) {} there stopped answering the launcher together, without "
                              "an exit record (the host died, or its network link went down)",
                              *run.lostHost, rankList(there)),
        "check that host: is it up, what its kernel log says (out of memory, a panic), is its link up; to go on "
        "without it next time, checkpoint and run with ddprun --max-restarts N --min-np M (docs/reliability.md)",
        Confidence::kHigh, fmt::format("ping {0}; ssh {0} 'dmesg | tail -50; ip -s link'", *run.lostHost));
  }
  std::vector<int> collateral;
  for (const auto& e : run.exits) {
    // A rank the launcher judged collateral may have been killed before its record was written.
    if (e.status == RankStatus::kCollateral && !e.failed()) collateral.push_back(e.rank);
    if (e.status == RankStatus::kHung) {
      hungRank(run, e, out);
      continue;
    }
    if (!e.failed()) continue;
    if (e.stopRequested && !e.culprit()) {
      collateral.push_back(e.rank);
      continue;
    }
    const std::string log = RunLayout(run.dir).rankLog(e.rank);
    add(out, FindingKind::kRankFailed, Severity::kCritical, {e.rank},
        fmt::format("rank {}{} {}{}", e.rank, e.host.empty() ? "" : " on " + e.host,
                    e.signal ? fmt::format("was killed by signal {}", *e.signal)
                             : fmt::format("exited with code {}", *e.exitCode),
                    e.culprit() ? " (the first failure)" : ""),
        e.signal == kSigKill
            ? "SIGKILL is often the kernel's OOM killer: check dmesg, lower the batch or memory use"
            : fmt::format("read this rank's log ({}) for the error; other ranks failing after it are collateral", log),
        Confidence::kHigh,
        e.signal == kSigKill ? "dmesg | grep -i 'killed process' on " + (e.host.empty() ? "its host" : e.host)
                             : "tail -50 " + log);
  }
  if (!collateral.empty())
    add(out, FindingKind::kRanksStopped, Severity::kInfo, collateral,
        fmt::format("{} rank(s) were stopped by the launcher after another rank failed or the job was interrupted; "
                    "they are not at fault",
                    collateral.size()),
        fmt::format("look at the {} finding (the first failure); these ranks only followed it",
                    run.lostHost ? "host_lost" : "rank_failed"),
        Confidence::kHigh, "run.json's ranks: their status is collateral or stopped");
}

// A restarted job: what each restart cost (steps redone since the last checkpoint).
void restarts(const RunData& run, const TimingAnalysis&, Findings& out) {
  for (size_t i = 0; i + 1 < run.attempts.size(); ++i) {
    const auto& before = run.attempts[i];
    const auto& after = run.attempts[i + 1];
    const std::string where = RunLayout(run.dir).attempt(before.attempt).ranksDir();
    if (!before.lastStep) {
      add(out, FindingKind::kRestart, Severity::kInfo, {},
          fmt::format("attempt {} failed before its first step; attempt {} started over", before.attempt,
                      after.attempt),
          "see " + where + " for why it failed", Confidence::kHigh, "ls " + where);
      continue;
    }
    const int64_t resumed = after.firstStep.value_or(0);
    const int64_t redone = std::max<int64_t>(0, *before.lastStep - resumed + 1);
    const int64_t stepsBefore = *before.lastStep - before.firstStep.value_or(0) + 1;
    const double secondsPerStep = stepsBefore > 0 ? before.stepSeconds / static_cast<double>(stepsBefore) : 0;
    add(out, FindingKind::kRestart, redone > 0 ? Severity::kWarning : Severity::kInfo, {},
        fmt::format("attempt {} {} after step {}; attempt {} {}: {} step(s) ({} samples, about {:.2f} s of training) "
                    "were lost and done again",
                    before.attempt,
                    before.lostHost ? fmt::format("lost host {}", *before.lostHost) : std::string("failed"),
                    *before.lastStep, after.attempt,
                    !after.firstStep ? "wrote no timings"
                    : resumed == 0   ? "started from step 0 (no checkpoint)"
                                     : fmt::format("resumed from the checkpoint at step {}", resumed) +
                                         (after.ranks > 0 && after.ranks != before.ranks
                                              ? fmt::format(" with {} ranks instead of {}", after.ranks, before.ranks)
                                              : ""),
                    redone, redone * before.samplesPerStep, static_cast<double>(redone) * secondsPerStep),
        redone > 0
            ? fmt::format("checkpoint more often (train --checkpoint-every N) so that a restart redoes less; find "
                          "why attempt {} failed in {}",
                          before.attempt, where)
            : fmt::format("nothing was lost; find why attempt {} failed in {}", before.attempt, where),
        Confidence::kHigh, "ls " + where);
  }
}

void missingRanks(const RunData& run, const TimingAnalysis& t, Findings& out) {
  if (t.missingRanks.empty()) return;
  add(out, FindingKind::kMissingRanks, Severity::kWarning, t.missingRanks,
      fmt::format("{} of {} ranks wrote no timings", t.missingRanks.size(), run.worldSize.value_or(0)),
      "a rank that wrote nothing failed early or ran without DDPRUN_RUN_DIR; check its log", Confidence::kHigh,
      "ls " + RunLayout(run.dir).timingsDir());
}

}  // namespace ddp::profiler::rules
