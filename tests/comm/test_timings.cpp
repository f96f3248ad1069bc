// The timings record, the step timer and the bucket assignment.
#include "ddp/comm/buckets.hpp"
#include "ddp/comm/error.hpp"
#include "ddp/comm/step_timer.hpp"
#include "ddp/comm/timings.hpp"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

using namespace ddp::comm;
namespace fs = std::filesystem;

namespace {

fs::path tempDir() {
  auto dir = fs::temp_directory_path() / ("ddp-timings-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::vector<std::string> lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("a step record survives formatting and parsing", "[comm][timings]") {
  StepRecord r;
  r.rank = 3;
  r.worldSize = 8;
  r.step = 41;
  r.startUnixUs = 1764450000123456;
  r.samples = 64;
  r.stepMs = 12.5;
  r.phaseMs(Phase::kData) = 0.5;
  r.phaseMs(Phase::kCommWait) = 1.25;
  r.collectives.push_back({CollectiveOp::kAllreduce, 2, 1 << 20, r.startUnixUs + 9000, 0.75});
  r.collectives.push_back({CollectiveOp::kBroadcast, -1, 64, r.startUnixUs + 10, 0.01});
  r.loss = 2.25;
  auto line = formatStepRecord(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("\"comm_wait\":1.25") != std::string::npos);
  auto back = parseStepRecord(line);
  CHECK(back.rank == 3);
  CHECK(back.worldSize == 8);
  CHECK(back.step == 41);
  CHECK(back.startUnixUs == r.startUnixUs);
  CHECK(back.samples == 64);
  CHECK(back.stepMs == 12.5);
  CHECK(back.phasesMs == r.phasesMs);
  REQUIRE(back.collectives.size() == 2);
  CHECK(back.collectives[0].op == CollectiveOp::kAllreduce);
  CHECK(back.collectives[0].bucket == 2);
  CHECK(back.collectives[0].bytes == (1u << 20));
  CHECK(back.collectives[1].bucket == -1);
  CHECK(back.loss == 2.25);
}

TEST_CASE("a record from another writer: missing phases are zero, extra keys ignored", "[comm][timings]") {
  auto r = parseStepRecord(R"({"schema":1,"rank":0,"step":0,"start_unix_us":5,"samples":8,)"
                           R"("step_ms":3,"phases_ms":{"forward":1},"host":"a"})");
  CHECK(r.phaseMs(Phase::kForward) == 1);
  CHECK(r.phaseMs(Phase::kBackward) == 0);
  CHECK(r.collectives.empty());
  CHECK_FALSE(r.loss);
}

TEST_CASE("malformed records say which field is wrong", "[comm][timings]") {
  const std::string ok = R"("rank":0,"step":1,"start_unix_us":5,"samples":8,"step_ms":3,"phases_ms":{})";
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1," + ok.substr(0, ok.size() - 15) + "}"),
                    Catch::Contains("missing field \"phases_ms\""));
  CHECK_THROWS_WITH(parseStepRecord(R"({"schema":2,)" + ok + "}"), Catch::Contains("schema version 2"));
  CHECK_THROWS_WITH(parseStepRecord(R"({"schema":1,"rank":"0",)" + ok.substr(9) + "}"),
                    Catch::Contains("field \"rank\" must be an integer"));
  CHECK_THROWS_WITH(parseStepRecord(R"({"schema":1,"rank":-1,)" + ok.substr(9) + "}"),
                    Catch::Contains("\"rank\" is -1"));
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1," + ok.substr(0, ok.size() - 2) + "{\"data\":-1}}"),
                    Catch::Contains("\"data\" must be a duration"));
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1," + ok + R"(,"collectives":[{"op":"gather","bytes":1,"start_unix_us":1,"duration_ms":1}]})"),
                    Catch::Contains("unknown collective op \"gather\""));
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1,"), Catch::Contains("not JSON"));
  CHECK_THROWS_AS(parseStepRecord("[1]"), ddp::ConfigError);
  // Found by fuzz_timings: a number JSON cannot hold is a bad line, not an escaping exception.
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1," + ok + ",\"x\":1e999}"), Catch::Contains("not JSON") && Catch::Contains("number overflow"));
}

TEST_CASE("the timer writes one line per step with phases within the step", "[comm][timings]") {
  auto dir = tempDir();
  auto path = timingsPath(dir.string(), 7);
  CHECK(path == (dir / "timings" / "rank-00007.jsonl").string());
  {
    StepTimerOptions options;
    options.path = path;
    options.rank = 7;
    options.worldSize = 8;
    options.flushInterval = std::chrono::hours(1);
    StepTimer timer(options);
    for (int step = 0; step < 3; ++step) {
      timer.beginStep(step, 16);
      timer.beginPhase(Phase::kData);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      timer.beginPhase(Phase::kForward);  // closes data
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      { auto scope = timer.phase(Phase::kOptimizer); }
      auto start = StepTimer::Clock::now();
      std::thread([&] { timer.recordCollective(CollectiveOp::kAllreduce, 0, 1024, start, std::chrono::microseconds(500)); }).join();
      const auto& record = timer.endStep();
      CHECK(record.phaseMs(Phase::kData) >= 2);
      CHECK(record.phaseMs(Phase::kForward) >= 1);
      double sum = 0;
      for (double ms : record.phasesMs) sum += ms;
      CHECK(sum <= record.stepMs);
    }
    // Buffered: nothing reaches the file before the buffer fills or the interval passes.
    CHECK(fs::file_size(path) == 0);
  }
  auto written = lines(path);
  REQUIRE(written.size() == 3);
  for (size_t i = 0; i < written.size(); ++i) {
    auto r = parseStepRecord(written[i]);
    CHECK(r.step == static_cast<int64_t>(i));
    CHECK(r.rank == 7);
    REQUIRE(r.collectives.size() == 1);
    CHECK(r.collectives[0].durationMs == Approx(0.5));
    CHECK(r.collectives[0].startUnixUs >= r.startUnixUs);
  }
  fs::remove_all(dir);
}

TEST_CASE("the timer's path comes from DDPRUN_RUN_DIR", "[comm][timings]") {
  ddp::Environment with(std::map<std::string, std::string, std::less<>>{{"DDPRUN_RUN_DIR", "/runs/x"}});
  CHECK(StepTimerOptions::fromEnvironment(with, 12, 16).path == "/runs/x/timings/rank-00012.jsonl");
  CHECK(StepTimerOptions::fromEnvironment(ddp::Environment{}, 0, 1).path.empty());
  StepTimer silent(StepTimerOptions{});
  CHECK_FALSE(silent.writing());
  silent.beginStep(0, 1);
  CHECK(silent.endStep().stepMs >= 0);
}

TEST_CASE("an unwritable timings path is a ConfigError naming it", "[comm][timings]") {
  StepTimerOptions options;
  options.path = "/proc/no-such-dir/rank-00000.jsonl";
  CHECK_THROWS_WITH(StepTimer(options), Catch::Contains("/proc/no-such-dir"));
}

TEST_CASE("buckets: reverse-order parameters fill a small first bucket, then full ones", "[comm][buckets]") {
  const size_t kMiB = 1 << 20;
  std::vector<BucketParam> params = {{kMiB / 2, DType::kFloat32, -1}, {kMiB, DType::kFloat32, -1},
                                     {3 * kMiB, DType::kFloat32, -1}, {kMiB, DType::kFloat32, -1},
                                     {2 * kMiB, DType::kFloat32, -1}};
  auto buckets = assignBuckets(params, kMiB, 4 * kMiB);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].params == std::vector<size_t>{0, 1});      // reaches 1 MiB: closed
  CHECK(buckets[1].params == std::vector<size_t>{2, 3});      // reaches 4 MiB
  CHECK(buckets[2].params == std::vector<size_t>{4});         // the rest
  CHECK(buckets[1].bytes == 4 * kMiB);
}

TEST_CASE("buckets never mix dtypes or devices and come out in first-parameter order", "[comm][buckets]") {
  std::vector<BucketParam> params = {{100, DType::kFloat32, -1}, {100, DType::kFloat64, -1},
                                     {100, DType::kFloat32, 0}, {100, DType::kFloat32, -1}};
  auto buckets = assignBuckets(params, 1 << 20, 1 << 20);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].params == std::vector<size_t>{0, 3});
  CHECK(buckets[1].params == std::vector<size_t>{1});
  CHECK(buckets[1].dtype == DType::kFloat64);
  CHECK(buckets[2].device == 0);
  CHECK(assignBuckets({}, 1, 1).empty());
  // A parameter larger than the cap is a bucket of its own, never split.
  auto big = assignBuckets({{10, DType::kFloat32, -1}, {1000, DType::kFloat32, -1}, {10, DType::kFloat32, -1}}, 5, 5);
  CHECK(big.size() == 3);
}
