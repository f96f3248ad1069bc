// The diagnosis of communication, constructed with known answers: a slow link beside milder
// contention, a late peer that is not the network's fault, a batch too small for its gradients,
// communication measured against the link, a slow host among three.
#include "ddp/profiler/diagnosis/findings.hpp"
#include "ddp/profiler/render/report.hpp"
#include "profiler/constructed_runs.hpp"
#include "support/run_records.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace ddp::profiler;
using namespace ddp::profiler::constructed;
using Catch::Contains;

TEST_CASE("a slow link beside milder contention: the link first, the contention after it", "[profiler][diagnosis]") {
  // Every rank waits for a CPU a quarter of its time, but the transfer takes half of each step.
  auto run = syncRun(
      2, 40, [](int, int) { return 20.0; }, 20.0);
  for (int r = 0; r < 2; ++r)
    sample(run, r, 10, [](UtilSample& u, int) {
      u.cpus = "0-1";
      u.runDelayPct = 25;
    });
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  REQUIRE(findings.size() >= 2);
  CHECK(findingKindName(findings[0].kind) == "comm_bound");
  CHECK(findingKindName(findings[1].kind) == "cpu_contention");
  // And the other way round: the same transfer with ranks waiting for a CPU most of their time.
  for (auto& [rank, samples] : run.utilisation)
    for (auto& u : samples) u.runDelayPct = 60;
  const auto worse = findingsOf(run);
  INFO(kinds(worse));
  CHECK(findingKindName(worse.front().kind) == "cpu_contention");
  CHECK(kinds(worse).find("comm_bound") == std::string::npos);
  CHECK_THAT(worse.front().evidence, Contains("it explains the comm_bound finding"));
}

TEST_CASE("waiting for a late peer is not communication-bound", "[profiler][diagnosis]") {
  // Rank 1 computes 30 ms, rank 0 10 ms: rank 0 waits 20 ms a step, yet the transfer is 1 ms.
  auto run = syncRun(
      2, 40, [](int r, int) { return r == 1 ? 30.0 : 10.0; }, 1.0);
  const auto t = analyseTimings(run);
  CHECK(t.exposedCommShare > 0.3);
  CHECK(t.transferShare < 0.05);
  CHECK(t.peerWaitShare > 0.3);
  const auto findings = diagnose(run, t);
  CHECK(findingKindName(findings.front().kind) == "straggler");
  CHECK_THAT(findings.front().evidence, Contains("the others waited 20.0 ms per step for it"));
  CHECK(kinds(findings).find("comm_bound") == std::string::npos);
  for (const auto& f : findings)  // the wait is for the peer, not for the batch's communication
    if (f.kind == FindingKind::kSmallBatch) CHECK(f.severity == Severity::kInfo);
}

TEST_CASE("a batch too small for its gradients: small_batch first, before the rank's threads",
          "[profiler][diagnosis]") {
  // 2.7 MB of gradients for 2 ms of compute: the allreduce, launched early in backward, takes longer
  // than forward + backward; the step waits for it about a third of its time, mostly for the
  // transfer; the ranks jitter, so each waits a little for the other too. Each rank's compute and
  // communication threads share its one core.
  auto run = syncRun(
      2, 40, [](int r, int s) { return (r + s) % 2 ? 2.6 : 2.0; }, 0.8, 2'700'000);
  for (auto& [rank, records] : run.timings)
    for (auto& rec : records) {
      rec.collectives[0].startUnixUs -= 1500;
      rec.collectives[0].durationMs += 1.5;
    }
  twoThreadsOnOwnCore(run, 22);
  const auto t = analyseTimings(run);
  INFO("transfer " << t.transferShare << ", exposed " << t.phaseShare[Phase::kCommWait]);
  REQUIRE(t.transferShare < 0.25);
  auto findings = diagnose(run, t);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  CHECK(findingKindName(findings.front().kind) == "small_batch");
  CHECK(findings.front().severity == Severity::kWarning);
  CHECK_THAT(findings.front().evidence, Contains("takes longer than forward + backward"));
  CHECK_THAT(findings.front().fix, Contains("a larger batch per rank"));
  CHECK(kinds(findings).find("threads_oversubscribed") != std::string::npos);
  // The same communication behind 5 ms of compute: shorter than forward + backward, the step
  // waiting less than a quarter of its time: information only.
  auto longer = syncRun(
      2, 40, [](int r, int s) { return (r + s) % 2 ? 5.6 : 5.0; }, 0.8, 2'700'000);
  for (auto& [rank, records] : longer.timings)
    for (auto& rec : records) rec.collectives[0].durationMs += 1.5;
  const auto info = findingsOf(longer);
  const auto small =
      std::find_if(info.begin(), info.end(), [](const Finding& f) { return f.kind == FindingKind::kSmallBatch; });
  REQUIRE(small != info.end());
  CHECK(small->severity == Severity::kInfo);
}

TEST_CASE("communication measured against the link", "[profiler][diagnosis]") {
  // Every rank waits 30 ms for the transfer of 64 MiB: 2.2 GB/s of bus bandwidth at 2 ranks.
  auto run = syncRun(
      2, 30, [](int, int) { return 20.0; }, 30.0, 64 << 20);
  const auto t = analyseTimings(run);
  REQUIRE(t.allreduceBusbwGbps);
  CHECK(*t.allreduceBusbwGbps == Approx(64.0 * (1 << 20) / 0.032 / 1e9).epsilon(0.01));
  SECTION("at the link's speed: the link is the limit") {
    run.bench.push_back({"mpi", "allreduce", 2, 64 << 20, 0, 0, 2.5});
    const auto findings = findingsOf(run);
    CHECK(findingKindName(findings.front().kind) == "comm_bound");
    CHECK(findings.front().confidence == Confidence::kHigh);
    CHECK_THAT(findings.front().evidence, Contains("of what the link delivers"));
  }
  SECTION("far below the link: something else slows it") {
    run.bench.push_back({"mpi", "allreduce", 2, 64 << 20, 0, 0, 40.0});
    const auto findings = findingsOf(run);
    const auto comm = std::find_if(findings.begin(), findings.end(),
                                   [](const Finding& f) { return f.kind == FindingKind::kCommBound; });
    REQUIRE(comm != findings.end());
    CHECK(comm->confidence == Confidence::kLow);
    CHECK_THAT(comm->evidence, Contains("something other than the link slows them"));
  }
}

namespace {

// Three hosts, one rank each (sim0..sim2 at 10.0.0.1..3), the gradients going round the ring
// 0 -> 2 -> 1 -> 0: each sample, each rank's connection to its successor delivered 2 MiB in
// sendingMs(rank) ms.
RunData ringOfThree(const std::function<double(int)>& sendingMs) {
  auto run = syncRun(
      3, 40, [](int, int) { return 20.0; }, 30.0, 64 << 20);
  const int next[] = {2, 0, 1};
  for (int r = 0; r < 3; ++r) {
    run.exits.push_back(ddp::test::exitOf(r, 0, std::nullopt, "sim" + std::to_string(r), false));
    sample(run, r, 4, [&](UtilSample& u, int) {
      u.links.push_back({"10.0.0." + std::to_string(r + 1), "10.0.0." + std::to_string(next[r] + 1), 2, sendingMs(r)});
      u.links.push_back({"10.0.0." + std::to_string(r + 1), "10.0.0." + std::to_string((r + 1) % 3 + 1), 0.01, 300});
    });
  }
  return run;
}

}  // namespace

TEST_CASE("three hosts, one host's network slow: comm_bound names the host", "[profiler][diagnosis]") {
  SECTION("both of sim2's links slow, sim1 -> sim0 fast: sim2, and the ideal at the fast link") {
    const auto run = ringOfThree([](int r) { return r == 1 ? 5.0 : 400.0; });
    const auto t = analyseTimings(run);
    REQUIRE(t.slowLinks);
    CHECK(t.slowLinks->hosts == std::vector<std::string>{"sim2"});
    CHECK_THAT(t.lost.linkSource, Contains("the fastest link between hosts, sim1 → sim0"));
    const auto findings = diagnose(run, t);
    REQUIRE_FALSE(findings.empty());
    CHECK(findings.front().kind == FindingKind::kCommBound);
    CHECK(findings.front().hosts == std::vector<std::string>{"sim2"});
    CHECK_THAT(findings.front().evidence, Contains("every link of sim2 is slow"));
    CHECK_THAT(findings.front().fix, Contains("sim2's network first"));
    const auto text = renderReportText({run, t, findings});
    CHECK_THAT(text, Contains("comm_bound (host sim2)"));
    CHECK_THAT(text, Contains("links between hosts"));
    // The small messages' links (0.04 MiB) measure latency: left out.
    CHECK_THAT(text, !Contains("sim0 → sim1"));
  }
  SECTION("only sim0 -> sim2 slow: that link, no host") {
    const auto run = ringOfThree([](int r) { return r == 0 ? 400.0 : 5.0; });
    const auto findings = findingsOf(run);
    REQUIRE_FALSE(findings.empty());
    CHECK(findings.front().kind == FindingKind::kCommBound);
    CHECK(findings.front().hosts.empty());
    CHECK_THAT(findings.front().fix, Contains("the link sim0 → sim2 first"));
  }
  SECTION("links that differ by a few milliseconds of the kernel's clock: none is slow") {
    const auto run = ringOfThree([](int r) { return r == 1 ? 4.0 : 12.0; });
    const auto t = analyseTimings(run);
    CHECK_FALSE(t.slowLinks);
    const auto findings = diagnose(run, t);
    REQUIRE_FALSE(findings.empty());
    CHECK(findings.front().kind == FindingKind::kCommBound);
    CHECK(findings.front().hosts.empty());
  }
  SECTION("every measured link as slow as the others: none to compare with") {
    auto run = ringOfThree([](int) { return 400.0; });
    run.utilisation.erase(1);
    CHECK_FALSE(analyseTimings(run).slowLinks);
  }
}
