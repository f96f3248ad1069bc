#include "ddp/profiler/trace.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::profiler {
namespace {

using nlohmann::json;

constexpr int kStepLane = 0, kPhaseLane = 1, kFirstBucketLane = 2, kOtherCollectivesLane = 1000;

std::map<int, std::string> rankHosts(const RunData& run) {
  std::map<int, std::string> out;
  for (const auto& e : run.exits)
    if (!e.host.empty()) out[e.rank] = e.host;
  return out;
}

// (step, bucket) -> [start, end] of that gradient bucket's collective, in wall-clock microseconds.
std::map<std::pair<int64_t, int>, std::pair<double, double>> bucketSpans(const std::vector<StepRecord>& records) {
  std::map<std::pair<int64_t, int>, std::pair<double, double>> out;
  for (const auto& r : records)
    for (const auto& c : r.collectives)
      if (c.bucket >= 0) {
        const double start = static_cast<double>(c.startUnixUs);
        out[{r.step, c.bucket}] = {start, start + c.durationMs * 1e3};
      }
  return out;
}

}  // namespace

std::map<std::string, double> estimateClockOffsets(const RunData& run) {
  // An allreduce cannot end on any rank before every rank has started it. For rank i on host h
  // and rank j on the reference host, with offset d = clock(h) - clock(ref):
  //   start_i - end_j <= d <= end_i - start_j   (each measured on its own clock).
  // Over every bucket of every step the bounds tighten; d is the middle of what is left.
  std::map<std::string, double> offsets;
  const auto hosts = rankHosts(run);
  if (run.timings.empty()) return offsets;
  const auto refHost = hosts.count(run.timings.begin()->first) ? hosts.at(run.timings.begin()->first) : std::string();
  if (refHost.empty()) return offsets;
  offsets[refHost] = 0;
  std::map<int, std::map<std::pair<int64_t, int>, std::pair<double, double>>> spans;
  for (const auto& [rank, records] : run.timings) spans[rank] = bucketSpans(records);
  std::map<std::string, std::pair<double, double>> bounds;  // host -> [lower, upper]
  for (const auto& [i, mine] : spans) {
    auto hi = hosts.find(i);
    if (hi == hosts.end() || hi->second == refHost) continue;
    for (const auto& [j, theirs] : spans) {
      auto hj = hosts.find(j);
      if (hj == hosts.end() || hj->second != refHost) continue;
      auto& [lower, upper] = bounds.try_emplace(hi->second, -1e300, 1e300).first->second;
      for (const auto& [key, span] : mine) {
        auto other = theirs.find(key);
        if (other == theirs.end()) continue;
        lower = std::max(lower, span.first - other->second.second);
        upper = std::min(upper, span.second - other->second.first);
      }
    }
  }
  for (const auto& [host, b] : bounds)
    if (b.first > -1e300 && b.second < 1e300) offsets[host] = (b.first + b.second) / 2;
  return offsets;
}

json traceJson(const RunData& run) {
  const auto hosts = rankHosts(run);
  const auto offsets = estimateClockOffsets(run);
  json events = json::array();
  int64_t origin = INT64_MAX;
  for (const auto& [rank, records] : run.timings)
    for (const auto& r : records) origin = std::min(origin, r.startUnixUs);
  if (origin == INT64_MAX) origin = 0;
  auto thread = [&](int pid, int tid, const std::string& name) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  };
  for (const auto& [rank, records] : run.timings) {
    const auto host = hosts.count(rank) ? hosts.at(rank) : std::string();
    const double shift = offsets.count(host) ? offsets.at(host) : 0.0;
    auto ts = [&](double unixUs) { return unixUs - shift - static_cast<double>(origin); };
    events.push_back(
        {{"ph", "M"},
         {"name", "process_name"},
         {"pid", rank},
         {"tid", 0},
         {"args", {{"name", host.empty() ? fmt::format("rank {}", rank) : fmt::format("rank {} ({})", rank, host)}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"tid", 0}, {"args", {{"sort_index", rank}}}});
    thread(rank, kStepLane, "steps");
    thread(rank, kPhaseLane, "phases");
    std::set<int> buckets;
    bool others = false;
    for (const auto& r : records) {
      const double start = ts(static_cast<double>(r.startUnixUs));
      json args = {{"samples", r.samples}};
      if (r.loss) args["loss"] = *r.loss;
      events.push_back({{"ph", "X"},
                        {"name", fmt::format("step {}", r.step)},
                        {"cat", "step"},
                        {"pid", rank},
                        {"tid", kStepLane},
                        {"ts", start},
                        {"dur", r.stepMs * 1e3},
                        {"args", args}});
      // Phases are recorded as durations: they are laid end to end, in their order, from the step's start.
      double at = start;
      for (Phase p : kPhases) {
        const double dur = r.phasesMs[p] * 1e3;
        if (dur <= 0) continue;
        events.push_back({{"ph", "X"},
                          {"name", std::string(phaseName(p))},
                          {"cat", "phase"},
                          {"pid", rank},
                          {"tid", kPhaseLane},
                          {"ts", at},
                          {"dur", dur},
                          {"args", {{"step", r.step}}}});
        at += dur;
      }
      for (const auto& c : r.collectives) {
        const int lane = c.bucket >= 0 ? kFirstBucketLane + c.bucket : kOtherCollectivesLane;
        if (c.bucket >= 0)
          buckets.insert(c.bucket);
        else
          others = true;
        events.push_back({{"ph", "X"},
                          {"name", c.bucket >= 0 ? fmt::format("{} bucket {}", collectiveOpName(c.op), c.bucket)
                                                 : std::string(collectiveOpName(c.op))},
                          {"cat", "collective"},
                          {"pid", rank},
                          {"tid", lane},
                          {"ts", ts(static_cast<double>(c.startUnixUs))},
                          {"dur", c.durationMs * 1e3},
                          {"args", {{"step", r.step}, {"bytes", c.bytes}}}});
      }
    }
    for (int b : buckets) thread(rank, kFirstBucketLane + b, fmt::format("bucket {}", b));
    if (others) thread(rank, kOtherCollectivesLane, "other collectives");
  }
  json clock = json::object();
  for (const auto& [host, offset] : offsets) clock[host] = offset;
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"run_dir", run.dir},
            {"origin_unix_us", origin},
            {"clock_offsets_us", clock},
            {"note",
             "phases are laid end to end from each step's start; collectives are at their recorded times; "
             "each host's clock is shifted by clock_offsets_us onto rank 0's"}}}};
}

}  // namespace ddp::profiler
