#include "verdict.hpp"

#include "ddp/common/text.hpp"
#include "ddp/launcher/rank.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::launcher {
namespace {

RankStatus statusOf(const VerdictInput& in, const Verdict& v, const RankExitRecord& rec, bool reported) {
  if (!reported) return RankStatus::kLost;
  if (v.hang && std::count(in.hung.begin(), in.hung.end(), rec.rank)) return RankStatus::kHung;
  if (v.culprit && rec.rank == *v.culprit) return RankStatus::kCulprit;
  // Collateral is what ddprun stopped; a rank that failed by itself keeps its own failure. A rank
  // asked to stop that still ended with an error code of its own (1-127, not a signal's) was
  // already failing when the request came (the same error as the culprit's, a moment later).
  if (rec.stopRequested && in.interruptedBy && !v.culprit) return RankStatus::kStopped;
  const bool ownCode = rec.exitCode && *rec.exitCode > 0 && *rec.exitCode < 128 && !rec.signal;
  if (rec.stopRequested && !ownCode) return RankStatus::kCollateral;
  if (rec.failed()) return RankStatus::kFailed;
  return RankStatus::kOk;
}

void chooseExit(const VerdictInput& in, Verdict& v) {
  if (in.interruptedBy) {
    v.exitCode = 128 + *in.interruptedBy;
    v.status = RunStatus::kInterrupted;
  } else if (v.hang) {
    v.exitCode = 124;
    v.status = RunStatus::kHung;
  } else if (v.culprit) {
    v.exitCode = v.records.at(*v.culprit).exitStatus().shellCode();
    v.status = RunStatus::kFailed;
  } else if (v.lostHost) {
    v.exitCode = 1;
    v.status = RunStatus::kFailed;
  } else if (!v.lost.empty() || (in.mpirun && in.mpirun->failed())) {
    v.exitCode = in.mpirun && in.mpirun->failed() ? std::max(1, in.mpirun->shellCode()) : 1;
    v.status = RunStatus::kFailed;
  }
}

int64_t firstOwnFailure(const VerdictInput& in) {
  int64_t first = INT64_MAX;
  for (const auto& [r, rec] : in.reported)
    if (rec.failedOnItsOwn()) first = std::min(first, rec.endUnixUs);
  return first;
}

// The host is the culprit: what failed elsewhere is collateral (its peers' collectives broke with it),
// and so is a rank elsewhere whose worker went quiet at `since` or after: mpirun, having lost that
// host's daemon, kills every local process a second after SIGTERM, worker included, record or not
// (srun ends the whole step when it cannot start a node's tasks).
void blameHost(const VerdictInput& in, Verdict& v, const std::string& host, std::vector<int> ranks, int64_t since) {
  v.lostHost = host;
  v.lostHostRanks = std::move(ranks);
  v.culprit.reset();
  v.alsoFailed.clear();
  v.collateral.clear();
  v.lost.clear();
  for (auto& [r, rec] : v.records) {
    const auto dropped = in.dropped.find(r);
    const bool there = std::count(v.lostHostRanks.begin(), v.lostHostRanks.end(), r) > 0;
    const bool quietAfter =
        rec.status == RankStatus::kLost && !there && dropped != in.dropped.end() && dropped->second >= since;
    if (rec.status == RankStatus::kCulprit || rec.status == RankStatus::kFailed ||
        rec.status == RankStatus::kCollateral || rec.status == RankStatus::kStopped || quietAfter) {
      rec.status = RankStatus::kCollateral;
      v.collateral.push_back(r);
    } else if (rec.status == RankStatus::kLost) {
      v.lost.push_back(r);
    }
  }
}

// The host whose ranks' connections all dropped without an exit record, the first of them before any
// rank failed on its own (a host that dies takes its workers with it; the others fail after it).
void findLostHost(const VerdictInput& in, Verdict& v) {
  std::map<std::string, std::vector<int>> byHost;
  for (const auto& [r, rec] : v.records)
    if (!rec.host.empty()) byHost[rec.host].push_back(r);
  const int64_t firstFailure = firstOwnFailure(in);
  int64_t best = INT64_MAX;
  const std::vector<int>* lost = nullptr;
  const std::string* lostHost = nullptr;
  for (const auto& [host, ranks] : byHost) {
    int64_t first = INT64_MAX;
    bool all = true;
    for (int r : ranks) {
      const auto it = in.dropped.find(r);
      all = all && !in.reported.count(r) && it != in.dropped.end();
      if (it != in.dropped.end()) first = std::min(first, it->second);
    }
    if (all && first <= firstFailure && first < best) best = first, lost = &ranks, lostHost = &host;
  }
  if (lost) blameHost(in, v, *lostHost, *lost, best);
}

// The first host none of whose ranks reached ddprun while another host's did, when no rank failed
// on its own: it never came up (down, unreachable, or the launcher could not start its ranks).
// When no rank arrived at all, the first host whose probe failed while another host's worked.
bool findHostNeverUp(const VerdictInput& in, Verdict& v) {
  const auto arrived = [&](int r) { return in.known.count(r) > 0 || in.reported.count(r) > 0; };
  const auto probe = [&](const std::string& host) {
    const auto it = in.probed.find(host);
    return it == in.probed.end() ? std::optional<std::string>() : it->second;
  };
  bool someArrived = false;
  const std::pair<std::string, std::vector<int>>* silent = nullptr;
  for (const auto& placed : in.placement) {
    const auto& ranks = placed.second;
    const auto probed = probe(placed.first);
    if (std::any_of(ranks.begin(), ranks.end(), arrived) || (probed && probed->empty()))
      someArrived = true;
    else if (!silent && !ranks.empty() && (in.probed.empty() || probed))
      silent = &placed;
  }
  if (!silent || !someArrived || firstOwnFailure(in) != INT64_MAX) return false;
  blameHost(in, v, silent->first, silent->second, INT64_MIN);
  v.hostNeverUp = true;
  v.neverUpProbe = probe(silent->first).value_or("");
  for (int r : silent->second) v.records[r].host = silent->first;  // where they were to run
  return true;
}

}  // namespace

Verdict judgeRanks(const VerdictInput& in) {
  Verdict v;
  v.hang = !in.hung.empty();
  if (v.hang) {
    v.culprit = in.hung.front();
  } else {
    std::vector<RankExitRecord> all;
    for (const auto& [r, rec] : in.reported) all.push_back(rec);
    v.culprit = findCulprit(all);
  }
  for (int r = 0; r < in.np; ++r) {
    const auto it = in.reported.find(r);
    const bool reported = it != in.reported.end();
    RankExitRecord rec = reported ? it->second : in.known.count(r) ? in.known.at(r) : RankExitRecord{};
    rec.rank = r;
    rec.status = statusOf(in, v, rec, reported);
    if (rec.status == RankStatus::kLost) v.lost.push_back(r);
    if (rec.status == RankStatus::kCollateral || rec.status == RankStatus::kStopped) v.collateral.push_back(r);
    if (rec.status == RankStatus::kFailed) v.alsoFailed.push_back(r);
    v.records[r] = rec;
  }
  if (!v.hang && !in.interruptedBy && !findHostNeverUp(in, v)) findLostHost(in, v);
  chooseExit(in, v);
  return v;
}

std::string collateralLine(const Verdict& v) {
  return v.collateral.empty()
             ? ""
             : fmt::format("rank(s) {} were stopped because of it (collateral, not at fault)", rankList(v.collateral));
}

namespace {

// What ddprun says of the lost host: it never came up (named by its probe, or because the others'
// ranks arrived), or it was lost while the job ran.
std::string lostHostLine(const Verdict& v, const std::string& localHost, const std::string& launcher) {
  const std::string ranks = rankList(v.lostHostRanks);
  if (!v.neverUpProbe.empty())
    return fmt::format(
        "host {0} never came up: none of its ranks ({1}) reached ddprun, and {2} could not start a process there "
        "alone (`{2} -np 1 --host {0}:1 /bin/true`: {3}) while it could on the other hosts (the host is down or "
        "unreachable, or cannot connect back to {4})",
        *v.lostHost, ranks, launcher, v.neverUpProbe, localHost);
  if (v.hostNeverUp)
    return fmt::format(
        "host {} never came up: none of its ranks ({}) reached ddprun (the host is down or unreachable, or {} could "
        "not start them there)",
        *v.lostHost, ranks, launcher);
  return fmt::format(
      "host {} was lost: ranks {} there stopped answering ddprun together, without an exit record (the host died, "
      "or its link to {} went down)",
      *v.lostHost, ranks, localHost);
}

}  // namespace

std::vector<std::string> lostLines(const Verdict& v, const std::string& localHost, const std::string& launcher,
                                   const std::string& launcherNote) {
  std::vector<std::string> out;
  std::vector<int> lost = v.lost;  // those of a lost host are named with it
  if (v.lostHost) {
    out.push_back(lostHostLine(v, localHost, launcher));
    if (!v.collateral.empty()) out.push_back(collateralLine(v));
    lost.erase(std::remove_if(lost.begin(), lost.end(), [&](int r) { return v.records.at(r).host == *v.lostHost; }),
               lost.end());
  }
  if (!lost.empty())
    out.push_back(fmt::format("rank(s) {} left no exit record: never started, or the worker was killed{}",
                              rankList(lost), launcherNote.empty() ? "" : " (" + launcherNote + ")"));
  return out;
}

}  // namespace ddp::launcher
