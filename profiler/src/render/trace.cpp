#include "ddp/profiler/render/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

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

namespace {

json metadataEvent(const char* name, int pid, int tid, json args) {
  return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

json completeEvent(std::string name, const char* category, int pid, int tid, double ts, double dur, json args) {
  return {{"ph", "X"},  {"name", std::move(name)}, {"cat", category}, {"pid", pid}, {"tid", tid}, {"ts", ts},
          {"dur", dur}, {"args", std::move(args)}};
}

void nameLane(json& events, int pid, int tid, const std::string& name) {
  events.push_back(metadataEvent("thread_name", pid, tid, {{"name", name}}));
  events.push_back(metadataEvent("thread_sort_index", pid, tid, {{"sort_index", tid}}));
}

// One rank's process: its name, its lanes, and its steps, phases and collectives; ts maps a
// wall-clock time of its host onto the trace's time line.
void appendRank(json& events, int rank, const std::string& host, const std::vector<StepRecord>& records,
                const std::function<double(double)>& ts) {
  events.push_back(
      metadataEvent("process_name", rank, 0,
                    {{"name", host.empty() ? fmt::format("rank {}", rank) : fmt::format("rank {} ({})", rank, host)}}));
  events.push_back(metadataEvent("process_sort_index", rank, 0, {{"sort_index", rank}}));
  nameLane(events, rank, kStepLane, "steps");
  nameLane(events, rank, kPhaseLane, "phases");
  std::set<int> buckets;
  bool others = false;
  for (const auto& r : records) {
    const double start = ts(static_cast<double>(r.startUnixUs));
    json args = {{"samples", r.samples}};
    if (r.loss) args["loss"] = *r.loss;
    events.push_back(
        completeEvent(fmt::format("step {}", r.step), "step", rank, kStepLane, start, r.stepMs * 1e3, args));
    // Phases are recorded as durations: they are laid end to end, in their order, from the step's start.
    double at = start;
    for (Phase p : kPhases) {
      const double dur = r.phasesMs[p] * 1e3;
      if (dur <= 0) continue;
      events.push_back(
          completeEvent(std::string(phaseName(p)), "phase", rank, kPhaseLane, at, dur, {{"step", r.step}}));
      at += dur;
    }
    for (const auto& c : r.collectives) {
      const bool bucket = c.bucket >= 0;
      if (bucket)
        buckets.insert(c.bucket);
      else
        others = true;
      events.push_back(completeEvent(
          bucket ? fmt::format("{} bucket {}", collectiveOpName(c.op), c.bucket) : std::string(collectiveOpName(c.op)),
          "collective", rank, bucket ? kFirstBucketLane + c.bucket : kOtherCollectivesLane,
          ts(static_cast<double>(c.startUnixUs)), c.durationMs * 1e3, {{"step", r.step}, {"bytes", c.bytes}}));
    }
  }
  for (int b : buckets) nameLane(events, rank, kFirstBucketLane + b, fmt::format("bucket {}", b));
  if (others) nameLane(events, rank, kOtherCollectivesLane, "other collectives");
}

}  // namespace

json traceJson(const RunData& run) {
  const auto hosts = rankHosts(run);
  const auto offsets = estimateClockOffsets(run);
  json events = json::array();
  int64_t origin = INT64_MAX;
  for (const auto& [rank, records] : run.timings)
    for (const auto& r : records) origin = std::min(origin, r.startUnixUs);
  if (origin == INT64_MAX) origin = 0;
  for (const auto& [rank, records] : run.timings) {
    const auto host = hosts.count(rank) ? hosts.at(rank) : std::string();
    const double shift = offsets.count(host) ? offsets.at(host) : 0.0;
    appendRank(events, rank, host, records,
               [&](double unixUs) { return unixUs - shift - static_cast<double>(origin); });
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
