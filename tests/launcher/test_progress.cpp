// The live progress line and the utilisation sampler's /proc reading (launcher/src/progress.hpp,
// launcher/src/sampler.hpp).
#include "../../launcher/src/progress.hpp"
#include "../../launcher/src/sampler.hpp"

#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>

using ddp::Phase;
using ddp::launcher::ProgressMeter;

namespace {
ddp::StepProgress at(long long step, std::optional<Phase> phase) { return {step, phase}; }
constexpr std::optional<Phase> kDone = std::nullopt;
}  // namespace

TEST_CASE("live progress: steps/s, ETA and the rank the others wait for", "[launcher][progress]") {
  ProgressMeter meter(3, 100);
  meter.update(0, at(0, Phase::kForward), 0.0);
  meter.update(1, at(0, Phase::kForward), 0.0);
  CHECK_FALSE(meter.line(0.5).has_value());  // rank 2 has not reported yet
  // 10 steps per second; rank 2 is always still in backward when 0 and 1 reach comm_wait.
  for (int step = 0; step < 40; ++step) {
    const double t = step * 0.1;
    meter.update(2, at(step, Phase::kBackward), t);
    meter.update(0, at(step, Phase::kCommWait), t + 0.01);
    meter.update(1, at(step, Phase::kCommWait), t + 0.02);
    for (int r : {2, 0, 1}) meter.update(r, at(step, kDone), t + 0.05);
  }
  auto line = meter.line(3.95);
  REQUIRE(line);
  CHECK_THAT(*line, Catch::StartsWith("step 40/100 (40 %), 10.1 steps/s, ETA 0:06"));  // 30 steps in 2.96 s
  // Ranks 0 and 1 are seen in comm_wait in one sample of two (then done; 49 % with their first
  // forward), rank 2 never.
  CHECK_THAT(*line, Catch::EndsWith("; the others wait for rank 2 (it waits 0 % of the time, they 49 %)"));
  // Every rank waits alike: nobody is named.
  ProgressMeter even(2, 100);
  for (int step = 0; step < 40; ++step)
    for (int r : {0, 1}) {
      even.update(r, at(step, Phase::kCommWait), step * 0.1);
      even.update(r, at(step, kDone), step * 0.1 + 0.05);
    }
  CHECK_THAT(*even.line(3.95), !Catch::Contains("wait for rank"));
  ProgressMeter open(1, std::nullopt);
  open.update(0, at(0, kDone), 0);
  open.update(0, at(9, kDone), 1.0);
  CHECK(*open.line(1.0) == "step 10, 9.0 steps/s");
}

TEST_CASE("utilisation: CPU ticks and memory of a process group from /proc", "[launcher][util]") {
  // This test's own group: it is running, so it has ticks and resident pages. A group of its own,
  // not CTest's: under `ctest -j` that one also holds the other tests' processes, one of which may
  // be stopped or traced at the moment of the scan (seen once in a full -j2 run).
  if (::getpgrp() != ::getpid()) REQUIRE(::setpgid(0, 0) == 0);
  const auto processes = ddp::launcher::procfs::scanProcesses();
  const auto usage = ddp::launcher::groupUsage(processes, static_cast<int>(::getpgrp()));
  CHECK(usage.processes >= 1);
  CHECK(usage.rssPages > 0);
  CHECK_FALSE(usage.stopped);
  const auto none = ddp::launcher::groupUsage(processes, -12345);
  CHECK(none.processes == 0);
  const std::string path = "/tmp/ddprun-util-test-" + std::to_string(::getpid()) + ".jsonl";
  {
    ddp::launcher::UtilSampler sampler(path, 3, std::nullopt, std::chrono::milliseconds(1));
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(60);
    volatile double spin = 0;
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 100000; ++i) spin = spin + i;
      sampler.poll(static_cast<int>(::getpgrp()));
    }
  }
  std::ifstream in(path);
  std::string first;
  REQUIRE(std::getline(in, first));
  CHECK_THAT(first,
             Catch::Contains("\"rank\":3") && Catch::Contains("\"cpu_pct\":") && Catch::Contains("\"rss_mib\":"));
  CHECK(first.find("gpu_util_pct") == std::string::npos);  // no GPU asked for
  ::unlink(path.c_str());
  CHECK_THROWS_WITH(ddp::launcher::UtilSampler("/proc/nope/x.jsonl", 0, std::nullopt, std::chrono::milliseconds(1)),
                    Catch::Contains("cannot create /proc/nope/x.jsonl"));
}
