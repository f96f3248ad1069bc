#include "projection/replay.hpp"

#include "ddp/common/util_sample.hpp"
#include "stats.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>

namespace ddp::profiler::detail {
namespace {

constexpr double kEps = 1e-9;

// The CPUs a rank may run on: its last sample's that says, as the report's utilisation summary
// takes them; none without samples.
std::optional<std::set<int>> rankCpus(const RunData& run, int rank) {
  const auto it = run.utilisation.find(rank);
  if (it == run.utilisation.end()) return std::nullopt;
  for (auto u = it->second.rbegin(); u != it->second.rend(); ++u)
    if (u->cpus) {
      const auto list = parseCpuList(*u->cpus);
      return std::set<int>(list.begin(), list.end());
    }
  return std::nullopt;
}

// The share of a core each member of a group gets over time, from the members' CPU intervals
// (absolute ms): piecewise constant, cores / members computing where they are more than cores.
class Sharing {
 public:
  Sharing(const std::vector<std::pair<double, double>>& intervals, int cores) {
    std::vector<std::pair<double, int>> edges;
    for (const auto& [a, b] : intervals)
      if (b > a) edges.emplace_back(a, 1), edges.emplace_back(b, -1);
    std::sort(edges.begin(), edges.end());
    int computing = 0;
    for (const auto& [t, d] : edges) {
      computing += d;
      if (!points_.empty() && points_.back().first == t)
        points_.back().second = rateFor(computing, cores);
      else
        points_.emplace_back(t, rateFor(computing, cores));
    }
  }
  // The work done in [a, b] by a member computing all along it.
  double work(double a, double b) const {
    double w = 0;
    for (size_t i = 0; i + 1 < points_.size(); ++i) {
      const double lo = std::max(a, points_[i].first), hi = std::min(b, points_[i + 1].first);
      if (hi > lo) w += (hi - lo) * points_[i].second;
    }
    return w;
  }

 private:
  static double rateFor(int computing, int cores) { return computing > cores ? double(cores) / computing : 1.0; }
  std::vector<std::pair<double, double>> points_;  // from this time on, this rate
};

// Each rank's CPU work in the step: its phases' wall time with the sharing of its group undone.
void addWork(StepProfile& s, const std::vector<double>& startMs, const CoreGroups& groups) {
  const auto all = groups.members();
  for (size_t g = 0; g < all.size(); ++g) {
    const auto& members = all[g];
    std::vector<std::pair<double, double>> intervals;
    for (size_t r : members) {
      const auto& rs = s.ranks[r];
      const double t0 = startMs[r];
      intervals.emplace_back(t0, t0 + rs.backwardStartMs + rs.backwardMs);
      intervals.emplace_back(t0 + rs.stepMs - rs.optimizerMs, t0 + rs.stepMs);
    }
    const bool alone = members.size() <= static_cast<size_t>(groups.cores[g]);
    const Sharing sharing(intervals, groups.cores[g]);
    for (size_t r : members) {
      auto& rs = s.ranks[r];
      const double t0 = startMs[r], b0 = t0 + rs.backwardStartMs;
      const auto work = [&](double a, double b) { return alone ? b - a : sharing.work(a, b); };
      rs.preWorkMs = work(t0, b0);
      rs.backwardWorkMs = work(b0, b0 + rs.backwardMs);
      rs.optimizerWorkMs = work(t0 + rs.stepMs - rs.optimizerMs, t0 + rs.stepMs);
      rs.launchWorkMs.clear();
      for (double launch : rs.launchMs)
        rs.launchWorkMs.push_back(work(b0, b0 + std::clamp(launch - rs.backwardStartMs, 0.0, rs.backwardMs)));
    }
  }
}

// Where the records have the training thread's CPU time (docs/timings.md, cpu_ms), that is each
// rank's work, measured: the sharing undone above is an inference from wall times, and a wall
// time also holds what other threads took from the core (a slow link's TCP processing, other
// processes). Bucket launches keep their share of backward's work.
bool measuredWork(StepProfile& s) {
  bool any = false;
  for (auto& rs : s.ranks) {
    if (!rs.cpuMs) continue;
    any = true;
    const auto& cpu = *rs.cpuMs;
    const double backward = cpu[Phase::kBackward];
    for (auto& w : rs.launchWorkMs) w = rs.backwardWorkMs > 0 ? w / rs.backwardWorkMs * backward : backward;
    rs.preWorkMs = cpu[Phase::kData] + cpu[Phase::kForward];
    rs.backwardWorkMs = backward;
    rs.optimizerWorkMs = cpu[Phase::kOptimizer];
  }
  return any;
}

// A rank's step: its phases, and its buckets' launches and ends from its step's start.
RankStep rankStep(const StepRecord& r, const std::vector<int>& ids) {
  RankStep rs;
  rs.stepMs = r.stepMs;
  rs.dataMs = r.phasesMs[Phase::kData];
  rs.backwardMs = r.phasesMs[Phase::kBackward];
  rs.commWaitMs = r.phasesMs[Phase::kCommWait];
  rs.optimizerMs = r.phasesMs[Phase::kOptimizer];
  rs.cpuMs = r.cpuMs;
  // Anchored at the step's end, which is the optimizer's end.
  rs.backwardStartMs = std::max(rs.dataMs, rs.stepMs - rs.optimizerMs - rs.commWaitMs - rs.backwardMs);
  std::vector<std::pair<double, double>> spans(ids.size());  // launch, end
  for (const auto& c : r.collectives) {
    if (c.op != CollectiveOp::kAllreduce || c.bucket < 0) continue;
    const auto it = std::find(ids.begin(), ids.end(), c.bucket);
    if (it == ids.end()) continue;
    const double launch = static_cast<double>(c.startUnixUs - r.startUnixUs) / 1000.0;
    spans[static_cast<size_t>(it - ids.begin())] = {launch, launch + c.durationMs};
  }
  for (const auto& span : spans) rs.launchMs.push_back(span.first), rs.endMs.push_back(span.second);
  return rs;
}

// A bucket is ready when its last rank launches it (in each rank's own time from its step's
// start: the previous step's allreduce lined the ranks up). Its transfer on a rank runs from
// then, or from the previous bucket's end if that was later, to its end there; the ring ends
// at slightly different times on different ranks, so the transfer is the mean over them.
void addTransfers(StepProfile& s) {
  const size_t buckets = s.ranks.front().launchMs.size();
  std::vector<double> ready(buckets, 0.0);
  for (const auto& rs : s.ranks)
    for (size_t b = 0; b < buckets; ++b) ready[b] = std::max(ready[b], rs.launchMs[b]);
  s.order.resize(buckets);
  std::iota(s.order.begin(), s.order.end(), 0);
  std::sort(s.order.begin(), s.order.end(), [&](size_t x, size_t y) { return ready[x] < ready[y]; });
  s.transferMs.assign(buckets, 0.0);
  for (const auto& rs : s.ranks) {
    double previousEnd = -1e300;
    for (size_t b : s.order) {
      s.transferMs[b] +=
          std::max(0.0, rs.endMs[b] - std::max(ready[b], previousEnd)) / static_cast<double>(s.ranks.size());
      previousEnd = std::max(previousEnd, rs.endMs[b]);
    }
  }
}

// Each rank's CPU work in every step made its median over the steps, phase by phase (its work
// before backward, in backward, in the optimizer; the bucket marks keep their place in backward):
// the machine's noise from step to step, summed by ranks that share a core and taken at its worst
// by the slowest of them, would make every replayed step slower than a typical one. Phase by
// phase, because a phase's time also holds what the kernel did on its core while it ran — on a
// slow link, the rank's TCP receive work, charged to whichever phase the packets arrived in, a few
// ms on one step's optimizer and none on the next's — and a replay in which that moved into the
// optimizer, after the network, lengthens the step it does not lengthen. What a step took beyond
// the typical is the anchoring's to carry.
void steadyWork(RunProfile& p) {
  for (size_t r = 0; r < static_cast<size_t>(p.ranks) && !p.steps.empty(); ++r) {
    std::vector<double> pre, backward, optimizer;
    for (const auto& s : p.steps) {
      const auto& rs = s.ranks[r];
      pre.push_back(rs.preWorkMs), backward.push_back(rs.backwardWorkMs), optimizer.push_back(rs.optimizerWorkMs);
    }
    const double typicalPre = median(pre), typicalBackward = median(backward), typicalOptimizer = median(optimizer);
    for (auto& s : p.steps) {
      auto& rs = s.ranks[r];
      const double f = rs.backwardWorkMs > 0 ? typicalBackward / rs.backwardWorkMs : 1.0;
      for (auto& w : rs.launchWorkMs) w *= f;
      rs.preWorkMs = typicalPre, rs.backwardWorkMs = typicalBackward, rs.optimizerWorkMs = typicalOptimizer;
    }
  }
}

}  // namespace

std::vector<std::vector<size_t>> CoreGroups::members() const {
  std::vector<std::vector<size_t>> out(cores.size());
  for (size_t r = 0; r < groupOf.size(); ++r) out[static_cast<size_t>(groupOf[r])].push_back(r);
  return out;
}

bool CoreGroups::shared() const {
  const auto all = members();
  for (size_t g = 0; g < all.size(); ++g)
    if (all[g].size() > static_cast<size_t>(cores[g])) return true;
  return false;
}

std::string sharingAssumption(const CoreGroups& groups) {
  std::vector<std::string> parts;
  const auto all = groups.members();
  for (size_t g = 0; g < all.size(); ++g)
    if (all[g].size() > static_cast<size_t>(groups.cores[g]))
      parts.push_back(fmt::format("ranks {} share {} core(s)", fmt::join(all[g], ", "), groups.cores[g]));
  return fmt::format(
      "CPU ranks that share cores (their CPU affinity in the utilisation samples): {}; each rank's compute is "
      "replayed as its own work (the sharing in the run undone, its median over the steps), shared again on CPU "
      "targets with the run's ranks per core, alone on GPU targets",
      fmt::join(parts, "; "));
}

CoreGroups aloneGroups(int ranks) {
  CoreGroups g;
  for (int r = 0; r < ranks; ++r) g.groupOf.push_back(r), g.cores.push_back(1);
  return g;
}

CoreGroups coreGroups(const RunData& run) {
  std::vector<int> ranks;
  for (const auto& [rank, records] : run.timings) ranks.push_back(rank);
  std::map<int, std::string> hostOf;
  for (const auto& e : run.exits) hostOf[e.rank] = e.host;
  std::vector<std::set<int>> cpus;
  for (int rank : ranks) {
    auto c = rankCpus(run, rank);
    if (!c || c->empty()) return aloneGroups(static_cast<int>(ranks.size()));
    cpus.push_back(std::move(*c));
  }
  // Ranks of one host whose CPUs overlap, transitively, share the union of them.
  std::vector<int> parent(ranks.size());
  std::iota(parent.begin(), parent.end(), 0);
  const auto root = [&](int i) {
    while (parent[static_cast<size_t>(i)] != i) i = parent[static_cast<size_t>(i)];
    return i;
  };
  for (size_t a = 0; a < ranks.size(); ++a)
    for (size_t b = a + 1; b < ranks.size(); ++b) {
      const bool sameHost = hostOf[ranks[a]] == hostOf[ranks[b]];
      const bool overlap = std::any_of(cpus[a].begin(), cpus[a].end(), [&](int c) { return cpus[b].count(c) > 0; });
      if (sameHost && overlap) parent[static_cast<size_t>(root(static_cast<int>(b)))] = root(static_cast<int>(a));
    }
  CoreGroups g;
  std::map<int, int> index;
  std::vector<std::set<int>> unions;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const int top = root(static_cast<int>(r));
    if (!index.count(top)) index[top] = static_cast<int>(unions.size()), unions.emplace_back();
    g.groupOf.push_back(index[top]);
    unions[static_cast<size_t>(index[top])].insert(cpus[r].begin(), cpus[r].end());
  }
  for (const auto& u : unions) g.cores.push_back(static_cast<int>(u.size()));
  return g;
}

CoreGroups carriedGroups(const CoreGroups& run) {
  const auto all = run.members();
  std::map<std::pair<int, int>, int> seen;  // (members, cores) -> groups
  for (size_t g = 0; g < all.size(); ++g) ++seen[{static_cast<int>(all[g].size()), run.cores[g]}];
  const auto common =
      std::max_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  CoreGroups out;
  const int members = common == seen.end() ? 1 : common->first.first;
  for (size_t r = 0; r < run.groupOf.size(); ++r) {
    const int group = static_cast<int>(r) / members;
    out.groupOf.push_back(group);
    if (static_cast<size_t>(group) == out.cores.size()) out.cores.push_back(common->first.second);
  }
  return out;
}

namespace {
double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
}  // namespace

double Transfers::scale() const {
  const double here = sum(hereMs);
  return here > 0 ? sum(thereMs) / here : 1.0;
}

std::vector<double> Transfers::of(const std::vector<double>& measuredMs) const {
  std::vector<double> out(measuredMs.size());
  const double here = sum(hereMs), added = sum(thereMs) - here;
  if (added <= 0) {  // a faster target (or the same)
    const double k = scale();
    for (size_t b = 0; b < out.size(); ++b) out[b] = measuredMs[b] * k;
    return out;
  }
  for (size_t b = 0; b < out.size(); ++b) out[b] = std::max(0.0, measuredMs[b] + thereMs[b] - hereMs[b]);
  const double hidden = std::max(0.0, std::min(sum(measuredMs) - here, added));
  const double total = sum(out);
  if (hidden > 0 && total > 0)
    for (auto& t : out) t *= (total - hidden) / total;
  return out;
}

RunProfile profileRun(const RunData& run, bool cpuRanks) {
  RunProfile p;
  p.groups = cpuRanks ? coreGroups(run) : aloneGroups(static_cast<int>(run.timings.size()));
  std::map<int64_t, std::map<int, const StepRecord*>> bySteps;
  for (const auto& [rank, records] : run.timings)
    for (const auto& r : records) bySteps[r.step][rank] = &r;
  std::vector<int64_t> common;
  for (const auto& [step, ranks] : bySteps)
    if (ranks.size() == run.timings.size()) common.push_back(step);
  if (common.size() > 3) common.erase(common.begin());
  p.ranks = static_cast<int>(run.timings.size());
  for (int64_t step : common) {
    const auto& ranks = bySteps[step];
    // The buckets of this step, by id, with their bytes, on every rank.
    std::map<int, uint64_t> bytes;
    std::map<int, size_t> seen;
    for (const auto& [rank, r] : ranks)
      for (const auto& c : r->collectives)
        if (c.op == CollectiveOp::kAllreduce && c.bucket >= 0) bytes[c.bucket] = c.bytes, ++seen[c.bucket];
    std::vector<int> ids;
    for (const auto& [id, n] : seen)
      if (n == ranks.size()) ids.push_back(id);
    if (ids.empty()) continue;
    if (p.bucketIds.empty()) {
      p.bucketIds = ids;
      for (int id : ids) p.bucketBytes.push_back(static_cast<double>(bytes[id]));
    } else if (ids != p.bucketIds) {
      continue;  // a step with other buckets (a rebuilt bucket order): left out
    }
    StepProfile s;
    std::vector<double> startMs;
    int64_t samples = 0;
    for (const auto& [rank, r] : ranks) {
      RankStep rs = rankStep(*r, ids);
      samples += r->samples;
      startMs.push_back(static_cast<double>(r->startUnixUs) / 1000.0);
      s.ranks.push_back(std::move(rs));
    }
    addWork(s, startMs, p.groups);
    if (cpuRanks && measuredWork(s)) p.cpuTimes = true;
    const double first = *std::min_element(startMs.begin(), startMs.end());
    for (size_t r = 0; r < s.ranks.size(); ++r) s.ranks[r].startOffsetMs = startMs[r] - first;
    addTransfers(s);
    p.samplesPerStep = samples;
    p.steps.push_back(std::move(s));
  }
  steadyWork(p);
  return p;
}

namespace {

enum class Segment { kIdle, kPre, kBackward, kWait, kOptimizer, kDone };

bool computing(Segment s) { return s == Segment::kPre || s == Segment::kBackward || s == Segment::kOptimizer; }

// One rank in the replay: where it is, the work left in its segment, and its buckets' marks.
struct Player {
  Segment segment = Segment::kIdle;
  double startAt = 0;
  double left = 0, backwardWork = 0, optimizerWork = 0, waitFrom = 0, waited = 0, end = 0;
  std::vector<std::pair<double, size_t>> marks;  // (work into backward, bucket), ascending
  size_t nextMark = 0;
  double backwardDone() const { return backwardWork - left; }
};

// The step played out in time: ranks computing at their share of their group's cores, moving on
// at each segment's end, bucket mark and the network's end.
class Replay {
 public:
  Replay(const StepProfile& s, double k, const std::vector<double>& transferMs, const CoreGroups& groups, double skew)
      : s_(s),
        transferMs_(transferMs),
        groups_(groups),
        players_(s.ranks.size()),
        crossed_(s.order.size(), 0),
        ready_(s.order.size(), 0) {
    for (size_t r = 0; r < players_.size(); ++r) {
      const auto& rs = s.ranks[r];
      auto& p = players_[r];
      const double dataWork = rs.backwardStartMs > 0 ? rs.preWorkMs * rs.dataMs / rs.backwardStartMs : 0;
      p.left = dataWork + k * (rs.preWorkMs - dataWork);
      p.startAt = skew * rs.startOffsetMs;
      p.backwardWork = k * rs.backwardWorkMs;
      p.optimizerWork = k * rs.optimizerWorkMs;
      for (size_t b = 0; b < s.order.size(); ++b)
        p.marks.emplace_back(k * std::clamp(rs.launchWorkMs[b], 0.0, rs.backwardWorkMs), b);
      std::sort(p.marks.begin(), p.marks.end());
    }
  }

  Replayed run() {
    settle();
    while (std::any_of(players_.begin(), players_.end(), [](const Player& p) { return p.segment != Segment::kDone; }))
      if (!advance()) break;  // nothing can move (cannot happen: every mark is within backward)
    Replayed out;
    for (const auto& p : players_) out.stepMs.push_back(p.end - p.startAt), out.waitMs.push_back(p.waited);
    return out;
  }

 private:
  // To the next moment something happens, each computing rank at its share of its group's cores.
  bool advance() {
    const size_t n = players_.size();
    std::vector<int> busy(groups_.cores.size(), 0);
    for (size_t r = 0; r < n; ++r)
      if (computing(players_[r].segment)) ++busy[static_cast<size_t>(groups_.groupOf[r])];
    std::vector<double> rate(n, 0);
    double dt = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < n; ++r) {
      const auto& p = players_[r];
      if (p.segment == Segment::kWait && done_) dt = std::min(dt, std::max(0.0, *done_ - t_));
      if (p.segment == Segment::kIdle) dt = std::min(dt, std::max(0.0, p.startAt - t_));
      if (!computing(p.segment)) continue;
      const auto g = static_cast<size_t>(groups_.groupOf[r]);
      rate[r] = busy[g] > groups_.cores[g] ? double(groups_.cores[g]) / busy[g] : 1.0;
      double work = p.left;
      if (p.segment == Segment::kBackward && p.nextMark < p.marks.size())
        work = std::min(work, std::max(0.0, p.marks[p.nextMark].first - p.backwardDone()));
      dt = std::min(dt, work / rate[r]);
    }
    if (!std::isfinite(dt)) return false;
    t_ += dt;
    for (size_t r = 0; r < n; ++r) players_[r].left -= rate[r] * dt;
    settle();
    return true;
  }

  // Moves every rank on as far as it goes at this moment: its start, marks crossed, segments
  // ended, its wait over once the network is done.
  void settle() {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& p : players_) changed = move(p) || changed;
      if (readyCount_ == s_.order.size() && !done_) {
        double d = 0;
        for (size_t b : s_.order) d = std::max(d, ready_[b]) + transferMs_[b];
        done_ = d;
        changed = true;
      }
    }
  }

  bool move(Player& p) {
    bool moved = false;
    if (p.segment == Segment::kIdle && t_ >= p.startAt - kEps) p.segment = Segment::kPre, moved = true;
    while (p.segment == Segment::kBackward && p.nextMark < p.marks.size() &&
           p.backwardDone() >= p.marks[p.nextMark].first - kEps) {
      const size_t b = p.marks[p.nextMark++].second;
      if (++crossed_[b] == players_.size()) ready_[b] = t_, ++readyCount_;
      moved = true;
    }
    if (computing(p.segment) && p.left <= kEps) {
      if (p.segment == Segment::kPre)
        p.segment = Segment::kBackward, p.left = p.backwardWork;
      else if (p.segment == Segment::kBackward)
        p.segment = Segment::kWait, p.waitFrom = t_;
      else
        p.segment = Segment::kDone, p.end = t_;
      moved = true;
    }
    if (p.segment == Segment::kWait && done_ && t_ >= *done_ - kEps) {
      p.waited = t_ - p.waitFrom;
      p.segment = Segment::kOptimizer;
      p.left = p.optimizerWork;
      moved = true;
    }
    return moved;
  }

  const StepProfile& s_;
  const std::vector<double>& transferMs_;
  const CoreGroups& groups_;
  std::vector<Player> players_;
  std::vector<size_t> crossed_;
  std::vector<double> ready_;
  size_t readyCount_ = 0;
  std::optional<double> done_;
  double t_ = 0;
};

}  // namespace

Replayed replay(const StepProfile& s, double k, const std::vector<double>& transferMs, const CoreGroups& groups,
                double skew) {
  return Replay(s, k, transferMs, groups, skew).run();
}

}  // namespace ddp::profiler::detail
