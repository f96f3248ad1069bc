#include "verdict.hpp"

#include "ddp/launcher/rank.hpp"

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

// The host whose ranks' connections all dropped without an exit record, the first of them before any
// rank failed on its own (a host that dies takes its workers with it; the others fail after it).
void findLostHost(const VerdictInput& in, Verdict& v) {
  std::map<std::string, std::vector<int>> byHost;
  for (const auto& [r, rec] : v.records)
    if (!rec.host.empty()) byHost[rec.host].push_back(r);
  int64_t firstFailure = INT64_MAX;
  for (const auto& [r, rec] : in.reported)
    if (rec.failedOnItsOwn()) firstFailure = std::min(firstFailure, rec.endUnixUs);
  int64_t best = INT64_MAX;
  for (const auto& [host, ranks] : byHost) {
    int64_t first = INT64_MAX;
    bool all = true;
    for (int r : ranks) {
      const auto it = in.dropped.find(r);
      all = all && !in.reported.count(r) && it != in.dropped.end();
      if (it != in.dropped.end()) first = std::min(first, it->second);
    }
    if (all && first <= firstFailure && first < best) best = first, v.lostHost = host, v.lostHostRanks = ranks;
  }
  if (!v.lostHost) return;
  // What failed after the host went is collateral: its peers' collectives broke with it. So is a rank
  // elsewhere whose worker went quiet after the host did: mpirun, having lost that host's daemon,
  // kills every local process a second after SIGTERM, worker included, record or not.
  v.culprit.reset();
  v.alsoFailed.clear();
  v.collateral.clear();
  v.lost.clear();
  for (auto& [r, rec] : v.records) {
    const auto dropped = in.dropped.find(r);
    const bool quietAfter = rec.status == RankStatus::kLost && rec.host != *v.lostHost && dropped != in.dropped.end() &&
                            dropped->second >= best;
    if (rec.status == RankStatus::kCulprit || rec.status == RankStatus::kFailed ||
        rec.status == RankStatus::kCollateral || rec.status == RankStatus::kStopped || quietAfter) {
      rec.status = RankStatus::kCollateral;
      v.collateral.push_back(r);
    } else if (rec.status == RankStatus::kLost) {
      v.lost.push_back(r);
    }
  }
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
  if (!v.hang && !in.interruptedBy) findLostHost(in, v);
  chooseExit(in, v);
  return v;
}

}  // namespace ddp::launcher
