// The step timer and the bucket assignment.
#include "ddp/comm/buckets.hpp"
#include "ddp/comm/step_timer.hpp"
#include "ddp/common/clock.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/common/step_record.hpp"

#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

using namespace ddp;
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

namespace {

// Runs on this thread until it has had `cpu` of CPU time.
void spinCpu(std::chrono::milliseconds cpu) {
  const auto until = threadCpuTime() + cpu;
  while (threadCpuTime() < until) {
  }
}

}  // namespace

TEST_CASE("the timer writes one line per step with phases within the step", "[comm][timings]") {
  auto dir = tempDir();
  auto path = ddp::RunLayout(dir.string()).timings(7);
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
      timer.beginPhase(Phase::kBackward);
      spinCpu(std::chrono::milliseconds(2));
      { auto scope = timer.phase(Phase::kOptimizer); }
      auto start = StepTimer::Clock::now();
      std::thread([&] {
        timer.recordCollective(CollectiveOp::kAllreduce, 0, 1024, start, std::chrono::microseconds(500));
      }).join();
      const auto& record = timer.endStep();
      CHECK(record.phasesMs[Phase::kData] >= 2);
      CHECK(record.phasesMs[Phase::kForward] >= 1);
      double sum = 0;
      for (double ms : record.phasesMs) sum += ms;
      CHECK(sum <= record.stepMs);
      // CPU time: the thread's, per phase; a sleep is not CPU.
      REQUIRE(record.cpuMs);
      CHECK((*record.cpuMs)[Phase::kBackward] >= 2);
      CHECK((*record.cpuMs)[Phase::kBackward] <= record.phasesMs[Phase::kBackward] + 0.01);
      CHECK((*record.cpuMs)[Phase::kData] < record.phasesMs[Phase::kData]);
      CHECK((*record.cpuMs)[Phase::kCommWait] == 0);
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

TEST_CASE("the progress file says the phase under way, read through the file as ddprun's worker reads it",
          "[comm][timings]") {
  const auto dir = tempDir();
  StepTimerOptions options;
  options.path = (dir / "rank-00000.jsonl").string();
  const auto progressPath = progressPathFor(options.path);
  auto read = [&] {
    std::ifstream in(progressPath, std::ios::binary);
    const auto progress = parseStepProgress(std::string(std::istreambuf_iterator<char>(in), {}));
    return progress ? formatStepProgress(*progress) : std::string("none");
  };
  {
    StepTimer timer(options);
    CHECK(fs::file_size(progressPath) == 48);
    CHECK(read() == "none");  // nothing yet: the heartbeat falls back to the timings file
    timer.beginStep(41, 8);
    timer.beginPhase(Phase::kForward);
    CHECK(read() == "41 forward");
    timer.beginPhase(Phase::kBackward);
    CHECK(read() == "41 backward");
    timer.endStep();
    CHECK(read() == "41 done");
  }
  CHECK(read() == "41 done");  // kept after the timer ends
  fs::remove_all(dir);
}

TEST_CASE("an unwritable timings path is a ConfigError naming it", "[comm][timings]") {
  StepTimerOptions options;
  options.path = "/proc/no-such-dir/rank-00000.jsonl";
  CHECK_THROWS_WITH(StepTimer(options), Catch::Contains("/proc/no-such-dir"));
}

TEST_CASE("buckets: reverse-order parameters fill a small first bucket, then full ones", "[comm][buckets]") {
  const size_t kMiB = 1 << 20;
  std::vector<BucketParam> params = {{kMiB / 2, DType::kFloat32, -1},
                                     {kMiB, DType::kFloat32, -1},
                                     {3 * kMiB, DType::kFloat32, -1},
                                     {kMiB, DType::kFloat32, -1},
                                     {2 * kMiB, DType::kFloat32, -1}};
  auto buckets = assignBuckets(params, kMiB, 4 * kMiB);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].params == std::vector<size_t>{0, 1});  // reaches 1 MiB: closed
  CHECK(buckets[1].params == std::vector<size_t>{2, 3});  // reaches 4 MiB
  CHECK(buckets[2].params == std::vector<size_t>{4});     // the rest
  CHECK(buckets[1].bytes == 4 * kMiB);
}

TEST_CASE("buckets never mix dtypes or devices and come out in first-parameter order", "[comm][buckets]") {
  std::vector<BucketParam> params = {
      {100, DType::kFloat32, -1}, {100, DType::kFloat64, -1}, {100, DType::kFloat32, 0}, {100, DType::kFloat32, -1}};
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
