#include "ddp/profiler/render/trace.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <set>
#include <string_view>

namespace ddp::profiler {
namespace {

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

// trace.json is written as text, an event a line: a 10,000-step run of 8 ranks has over a million
// events, and building them as a JSON tree first took most of `ddprof report` (docs/benchmarks.md,
// "Report cost").
class TraceWriter {
 public:
  explicit TraceWriter(std::string& out) : out_(out) {}

  void metadata(const char* name, int pid, int tid, const char* key, const std::string& value) {
    open();
    fmt::format_to(std::back_inserter(out_), R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"{}":)", name, pid,
                   tid, key);
    out_ += nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out_ += "}}";
  }
  void metadata(const char* name, int pid, int tid, const char* key, int value) {
    open();
    fmt::format_to(std::back_inserter(out_), R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"{}":{}}}}})", name,
                   pid, tid, key, value);
  }
  // A complete event; its name and category are the writer's own (no characters to escape), args
  // the inside of its args object.
  void complete(std::string_view name, const char* category, int pid, int tid, double ts, double dur,
                std::string_view args) {
    open();
    fmt::format_to(std::back_inserter(out_),
                   R"({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})", name,
                   category, pid, tid, ts, dur, args);
  }
  void nameLane(int pid, int tid, const std::string& name) {
    metadata("thread_name", pid, tid, "name", name);
    metadata("thread_sort_index", pid, tid, "sort_index", tid);
  }

 private:
  void open() {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
  }
  std::string& out_;
  bool first_ = true;
};

// One rank's process: its name, its lanes, and its steps, phases and collectives; ts maps a
// wall-clock time of its host onto the trace's time line.
void appendRank(TraceWriter& w, int rank, const std::string& host, const std::vector<StepRecord>& records,
                const std::function<double(double)>& ts) {
  w.metadata("process_name", rank, 0, "name",
             host.empty() ? fmt::format("rank {}", rank) : fmt::format("rank {} ({})", rank, host));
  w.metadata("process_sort_index", rank, 0, "sort_index", rank);
  w.nameLane(rank, kStepLane, "steps");
  w.nameLane(rank, kPhaseLane, "phases");
  std::set<int> buckets;
  bool others = false;
  std::string name, args;
  for (const auto& r : records) {
    const double start = ts(static_cast<double>(r.startUnixUs));
    args = fmt::format(R"("samples":{})", r.samples);
    if (r.loss && std::isfinite(*r.loss)) fmt::format_to(std::back_inserter(args), R"(,"loss":{})", *r.loss);
    w.complete(fmt::format("step {}", r.step), "step", rank, kStepLane, start, r.stepMs * 1e3, args);
    // Phases are recorded as durations: they are laid end to end, in their order, from the step's start.
    const std::string inStep = fmt::format(R"("step":{})", r.step);
    double at = start;
    for (Phase p : kPhases) {
      const double dur = r.phasesMs[p] * 1e3;
      if (dur <= 0) continue;
      w.complete(phaseName(p), "phase", rank, kPhaseLane, at, dur, inStep);
      at += dur;
    }
    for (const auto& c : r.collectives) {
      const bool bucket = c.bucket >= 0;
      if (bucket)
        buckets.insert(c.bucket);
      else
        others = true;
      name =
          bucket ? fmt::format("{} bucket {}", collectiveOpName(c.op), c.bucket) : std::string(collectiveOpName(c.op));
      w.complete(name, "collective", rank, bucket ? kFirstBucketLane + c.bucket : kOtherCollectivesLane,
                 ts(static_cast<double>(c.startUnixUs)), c.durationMs * 1e3,
                 fmt::format(R"("step":{},"bytes":{})", r.step, c.bytes));
    }
  }
  for (int b : buckets) w.nameLane(rank, kFirstBucketLane + b, fmt::format("bucket {}", b));
  if (others) w.nameLane(rank, kOtherCollectivesLane, "other collectives");
}

}  // namespace

std::string traceText(const RunData& run) {
  const auto hosts = rankHosts(run);
  const auto offsets = estimateClockOffsets(run);
  int64_t origin = INT64_MAX;
  for (const auto& [rank, records] : run.timings)
    for (const auto& r : records) origin = std::min(origin, r.startUnixUs);
  if (origin == INT64_MAX) origin = 0;
  std::string out = R"({"traceEvents":[)";
  TraceWriter w(out);
  for (const auto& [rank, records] : run.timings) {
    const auto host = hosts.count(rank) ? hosts.at(rank) : std::string();
    const double shift = offsets.count(host) ? offsets.at(host) : 0.0;
    appendRank(w, rank, host, records, [&](double unixUs) { return unixUs - shift - static_cast<double>(origin); });
  }
  nlohmann::json clock = nlohmann::json::object();
  for (const auto& [host, offset] : offsets) clock[host] = offset;
  const nlohmann::json other = {
      {"run_dir", run.dir},
      {"origin_unix_us", origin},
      {"clock_offsets_us", clock},
      {"note",
       "phases are laid end to end from each step's start; collectives are at their recorded times; "
       "each host's clock is shifted by clock_offsets_us onto rank 0's"}};
  out += "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":";
  out += other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out += "}\n";
  return out;
}

}  // namespace ddp::profiler
