// Timing analyses and diagnosis on constructed runs with known answers, and the run loader on
// bad input.
#include "ddp/common/error.hpp"
#include "ddp/profiler/diagnosis/findings.hpp"
#include "ddp/profiler/render/report.hpp"
#include "support/run_records.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace ddp::profiler;
using ddp::Phase;
using ddp::StepRecord;
using ddp::test::exitOf;

namespace {

struct RankShape {
  double data = 1, forward = 3, backward = 5, optimizer = 1, commWait = 0;
};

// A run of `ranks` ranks and `steps` steps; shape(rank) gives each rank's phases. Ranks wait
// for the slowest in comm_wait, as a synchronous allreduce makes them.
RunData makeRun(int ranks, int steps, int64_t samples, const std::function<RankShape(int)>& shape) {
  RunData run;
  run.dir = "constructed";
  run.worldSize = ranks;
  double slowest = 0;
  for (int r = 0; r < ranks; ++r) {
    auto s = shape(r);
    slowest = std::max(slowest, s.data + s.forward + s.backward);
  }
  for (int r = 0; r < ranks; ++r) {
    auto s = shape(r);
    for (int step = 0; step < steps; ++step) {
      StepRecord rec;
      rec.rank = r;
      rec.worldSize = ranks;
      rec.step = step;
      rec.startUnixUs = 1'000'000 + step * 100'000;
      rec.samples = samples;
      rec.phasesMs[Phase::kData] = s.data;
      rec.phasesMs[Phase::kForward] = s.forward;
      rec.phasesMs[Phase::kBackward] = s.backward;
      rec.phasesMs[Phase::kOptimizer] = s.optimizer;
      rec.phasesMs[Phase::kCommWait] = s.commWait + (slowest - (s.data + s.forward + s.backward));
      rec.stepMs = s.data + s.forward + s.backward + s.optimizer + rec.phasesMs[Phase::kCommWait] + 0.1;
      rec.collectives.push_back(
          {ddp::CollectiveOp::kAllreduce, 0, 1 << 20, rec.startUnixUs + 5000, rec.phasesMs[Phase::kCommWait] + 1.0});
      run.timings[r].push_back(rec);
    }
  }
  return run;
}

// One timings line as a step timer writes it.
std::string recordLine(int rank, int worldSize, int64_t step, int64_t samples, double stepMs, double forwardMs = 0) {
  StepRecord r;
  r.rank = rank;
  r.worldSize = worldSize;
  r.step = step;
  r.samples = samples;
  r.stepMs = stepMs;
  r.phasesMs[Phase::kForward] = forwardMs;
  return ddp::formatStepRecord(r);
}

bool hasFinding(const std::vector<Finding>& findings, const std::string& kind) {
  for (const auto& f : findings)
    if (findingKindName(f.kind) == kind) return true;
  return false;
}

bool anyWarning(const std::vector<Finding>& findings) {
  for (const auto& f : findings)
    if (f.severity != Severity::kInfo) return true;
  return false;
}

}  // namespace

TEST_CASE("a healthy run: no warning, the numbers add up", "[profiler][analysis]") {
  auto run = makeRun(4, 20, 32, [](int) { return RankShape{}; });
  auto t = analyseTimings(run);
  CHECK(t.stepsAnalysed == 19);
  CHECK(t.warmupSkipped);
  CHECK(t.globalSamplesPerStep == 128);
  CHECK(t.stepMsMedian == Approx(10.1));
  CHECK(t.samplesPerSecond == Approx(128 * 1000 / 10.1));
  CHECK(t.imbalanceRun == Approx(1.0));
  CHECK_FALSE(t.straggler);
  CHECK(t.missingRanks.empty());
  CHECK(t.overlapFraction.has_value());
  CHECK_FALSE(anyWarning(diagnose(run, t)));
  REQUIRE(t.stepMatrix.size() == 4);
  CHECK(t.matrixSteps.size() == 19);
  CHECK(t.matrixSteps.front() == 1);
  CHECK(t.stepMatrix[3][0] == Approx(10.1));
  auto long_ = makeRun(2, 2501, 8, [](int) { return RankShape{}; });
  auto lt = analyseTimings(long_);
  CHECK(lt.matrixSteps.size() == 834);  // 2500 steps, every third
  CHECK(lt.stepMatrix[1].size() == 834);
}

TEST_CASE("a rank twice as slow is the straggler, the others wait for it", "[profiler][analysis]") {
  auto run = makeRun(4, 20, 32, [](int r) { return r == 2 ? RankShape{1, 6, 10, 1, 0} : RankShape{}; });
  auto t = analyseTimings(run);
  REQUIRE(t.straggler);
  CHECK(t.straggler->rank == 2);
  CHECK(t.straggler->slowestShare == Approx(1.0));
  CHECK(t.straggler->extraComputeMs == Approx(8.0));
  CHECK(t.straggler->othersWaitMs == Approx(8.0));
  auto findings = diagnose(run, t);
  REQUIRE(hasFinding(findings, "straggler"));
  for (const auto& f : findings)
    if (findingKindName(f.kind) == "straggler") CHECK(f.ranks == std::vector<int>{2});
  CHECK_FALSE(hasFinding(findings, "load_imbalance"));  // explained by the straggler
}

TEST_CASE("a data-bound run", "[profiler][analysis]") {
  auto run = makeRun(2, 10, 16, [](int) { return RankShape{12, 3, 4, 1, 0}; });
  auto findings = diagnose(run, analyseTimings(run));
  REQUIRE(hasFinding(findings, "data_bound"));
  CHECK(findingKindName(findings.front().kind) == "data_bound");
  CHECK(findings.front().severity == Severity::kCritical);  // 60 % of the step
}

TEST_CASE("a comm-bound run", "[profiler][analysis]") {
  auto run = makeRun(2, 10, 16, [](int) { return RankShape{0.5, 2, 3, 0.5, 5}; });
  auto t = analyseTimings(run);
  CHECK(t.exposedCommShare == Approx(5 / 11.1).epsilon(0.01));
  auto findings = diagnose(run, t);
  REQUIRE(hasFinding(findings, "comm_bound"));
  CHECK_FALSE(hasFinding(findings, "straggler"));
}

TEST_CASE("a missing rank and a short rank are reported", "[profiler][analysis]") {
  auto run = makeRun(4, 10, 8, [](int) { return RankShape{}; });
  run.timings.erase(2);
  run.timings[3].resize(6);
  auto t = analyseTimings(run);
  CHECK(t.missingRanks == std::vector<int>{2});
  CHECK(t.shortRanks == std::vector<int>{3});
  CHECK(t.stepsAnalysed == 5);  // steps 1-5: those every present rank has, warm-up skipped
  auto findings = diagnose(run, t);
  REQUIRE(hasFinding(findings, "missing_ranks"));
  auto json = reportJson({run, t, findings});
  CHECK(json["missing_ranks"] == nlohmann::json({2}));
  CHECK(json["short_ranks"] == nlohmann::json({3}));
}

TEST_CASE("failed ranks: the culprit and its signal", "[profiler][analysis]") {
  RunData run = makeRun(2, 4, 8, [](int) { return RankShape{}; });
  run.exits = {exitOf(0, 0, std::nullopt, "a", false), exitOf(1, std::nullopt, 9, "b", true)};
  auto findings = diagnose(run, analyseTimings(run));
  REQUIRE(findingKindName(findings.front().kind) == "rank_failed");
  CHECK(findings.front().ranks == std::vector<int>{1});
  CHECK_THAT(findings.front().fix, Catch::Contains("OOM"));
}

TEST_CASE("NCCL rules: socket fallback across hosts, SHM between local GPUs, no GDR, errors", "[profiler][analysis]") {
  RunData run = makeRun(2, 4, 8, [](int) { return RankShape{}; });
  NcclFactsBuilder builder;
  for (const char* line :
       {"a:1:1 [0] NCCL INFO NET/IB : No device found.", "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
        "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0",
        "a:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 2[1] via SHM/direct/direct",
        "a:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.",
        "a:1:1 [0] misc/socket.cc:50 NCCL WARN Connect to 10.0.0.2<5> failed : Connection refused"})
    builder.addLine(line);
  run.nccl = builder.finish();
  auto findings = diagnose(run, analyseTimings(run));
  for (const char* kind : {"socket_fallback", "p2p_disabled", "no_gdr", "nccl_error"}) {
    INFO(kind);
    CHECK(hasFinding(findings, kind));
  }
  CHECK(findings.front().severity == Severity::kCritical);
}

TEST_CASE("socket fallback on hosts with eRDMA: the eRDMA fix, from any evidence of it", "[profiler][analysis]") {
  auto fallback = [](std::initializer_list<const char*> lines, const std::string& instance) {
    RunData run = makeRun(2, 4, 8, [](int) { return RankShape{}; });
    run.instance = instance;
    NcclFactsBuilder builder;
    for (const char* line : lines) builder.addLine(line);
    builder.addLine("b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0");
    run.nccl = builder.finish();
    const auto findings = diagnose(run, analyseTimings(run));
    const auto it = std::find_if(findings.begin(), findings.end(),
                                 [](const Finding& f) { return findingKindName(f.kind) == "socket_fallback"; });
    REQUIRE(it != findings.end());
    return *it;
  };
  const char* socket = "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>";
  const auto plain = fallback({socket}, "");
  CHECK_THAT(plain.fix, Catch::Contains("use RDMA between hosts"));
  // NCCL_NET=Socket with the devices there; NCCL_IB_HCA naming them; an eRDMA instance type.
  for (const auto& f : {fallback({"a:1:1 [0] NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE [RO]; OOB eth0:10.0.5.76<0>",
                                  "a:1:1 [0] NCCL INFO Using network Socket"},
                                 ""),
                        fallback({"a:1:1 [0] NCCL INFO NCCL_IB_HCA set by environment to erdma.", socket}, ""),
                        fallback({socket}, "ecs.ebmgn7ex.32xlarge")}) {
    CHECK_THAT(f.evidence, Catch::Contains("though the hosts have eRDMA"));
    CHECK_THAT(f.fix, Catch::Contains("NCCL_IB_HCA=erdma") && Catch::Contains("NCCL_NET_PLUGIN=none"));
  }
  CHECK_THAT(fallback({socket}, "ecs.gn7e-c16g1.32xlarge").fix, Catch::Contains("use RDMA between hosts"));  // no ERI
}

TEST_CASE("scaling: perfect weak and strong scaling, and runs that are not comparable", "[profiler][scaling]") {
  std::vector<RunData> weak;
  for (int n : {4, 1, 2}) weak.push_back(makeRun(n, 10, 32, [](int) { return RankShape{}; }));
  auto w = analyseScaling(weak);
  CHECK(w.kind == ScalingKind::kWeak);
  REQUIRE(w.points.size() == 3);
  CHECK(w.points[0].worldSize == 1);
  for (const auto& p : w.points) CHECK(p.efficiency == Approx(1.0));

  std::vector<RunData> strong;
  for (int n : {1, 2, 4}) {
    double f = 1.0 / n;
    strong.push_back(makeRun(n, 10, 64 / n, [f](int) {
      return RankShape{1 * f, 3 * f, 5 * f, 1 * f - 0.1 * (1 - f) / f * 0, 0};
    }));
  }
  auto s = analyseScaling(strong);
  CHECK(s.kind == ScalingKind::kStrong);
  CHECK(s.points[2].idealStepMs == Approx(s.points[0].stepMs / 4));
  CHECK(s.points[2].efficiency > 0.9);

  std::vector<RunData> mixed = {makeRun(1, 10, 32, [](int) { return RankShape{}; }),
                                makeRun(2, 10, 24, [](int) { return RankShape{}; })};
  CHECK_THROWS_WITH(analyseScaling(mixed), Catch::Contains("not comparable") && Catch::Contains("per rank"));
  mixed[1] = makeRun(2, 10, 32, [](int) { return RankShape{}; });
  mixed[0].command = {"train", "--model", "mlp"};
  mixed[1].command = {"train", "--model", "resnet18"};
  CHECK_THROWS_WITH(analyseScaling(mixed), Catch::Contains("--model mlp") && Catch::Contains("--model resnet18"));
  CHECK_THROWS_AS(analyseScaling({mixed[0]}), ddp::ConfigError);
}

TEST_CASE("the run loader keeps what is sound and names every bad line", "[profiler][run]") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("ddprof-run-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "timings");
  fs::create_directories(dir / "ranks");
  auto good = [](int rank, int step) { return recordLine(rank, 3, step, 4, 5, 2); };
  std::ofstream(dir / "timings" / "rank-00000.jsonl") << good(0, 0) << "\n"
                                                      << good(0, 1) << "\n{\"schema\":1,\"rank\":0\n"
                                                      << good(0, 2) << "\n";
  std::ofstream(dir / "timings" / "rank-00001.jsonl") << "{\"schema\":2,\"rank\":1}\n{\"schema\":2,\"rank\":1}\n";
  std::ofstream(dir / "timings" / "rank-00002.jsonl") << "";
  std::ofstream(dir / "ranks" / "rank-00000.exit.json") << "{\"rank\":0,\"exit_code\":0}";
  std::ofstream(dir / "ranks" / "rank-00001.exit.json") << "\x7f\x45LF garbage";
  auto run = loadRun(dir.string());
  CHECK(run.timings.size() == 1);
  CHECK(run.timings[0].size() == 3);
  CHECK(run.worldSize == 3);
  CHECK(run.exits.size() == 1);
  REQUIRE(run.problems.size() == 4);
  CHECK_THAT(run.problems[0], Catch::Contains("rank-00000.jsonl:3: ") && Catch::Contains("not JSON"));
  CHECK_THAT(run.problems[1], Catch::Contains("rank-00001.jsonl:1: schema version 2 is not supported") &&
                                  Catch::Contains("2 unusable lines"));
  CHECK_THAT(run.problems[2], Catch::Contains("rank-00002.jsonl: empty"));
  CHECK_THAT(run.problems[3], Catch::Contains("rank-00001.exit.json: not JSON"));
  auto t = analyseTimings(run);
  CHECK(t.missingRanks == std::vector<int>{1, 2});
  fs::remove_all(dir);
  fs::create_directories(dir);
  CHECK_THROWS_WITH(loadRun(dir.string()), Catch::Contains("is not a run directory"));
  CHECK_THROWS_WITH(loadRun((dir / "nope").string()), Catch::Contains("is not a directory"));
  fs::remove_all(dir);
}

TEST_CASE("a restarted run: what the restart redid, collateral ranks, hosts and ddpbench rows", "[profiler][run]") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("ddprof-restart-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (auto sub : {"timings", "ranks", "attempts/0/timings"}) fs::create_directories(dir / sub);
  auto steps = [](const fs::path& file, int rank, int from, int to) {
    std::ofstream out(file);
    for (int step = from; step <= to; ++step) out << recordLine(rank, 2, step, 8, 100) << "\n";
  };
  for (int rank : {0, 1}) {
    steps(dir / "attempts/0/timings" / fmt::format("rank-{:05}.jsonl", rank), rank, 0, 22);
    steps(dir / "timings" / fmt::format("rank-{:05}.jsonl", rank), rank, 20, 39);
  }
  std::ofstream(dir / "ranks" / "rank-00000.exit.json")
      << R"({"rank":0,"signal":15,"host":"sim0","stop_requested":true})";
  std::ofstream(dir / "ranks" / "rank-00001.exit.json") << R"({"rank":1,"exit_code":3,"host":"sim1","culprit":true})";
  std::ofstream(dir / "ddpbench.json")
      << R"({"backend":"gloo","nranks":2,"rows":[{"op":"allreduce","bytes":1024,"time_us":50,"algbw_gbps":0.02,"busbw_gbps":0.02}]})";
  auto run = loadRun(dir.string());
  CHECK(run.problems.empty());
  CHECK(run.hosts == std::set<std::string>{"sim0", "sim1"});
  REQUIRE(run.bench.size() == 1);
  CHECK(run.bench[0].busbwGbps == Approx(0.02));
  REQUIRE(run.attempts.size() == 2);
  CHECK(run.attempts[0].lastStep == 22);
  CHECK(run.attempts[1].firstStep == 20);
  auto findings = diagnose(run, analyseTimings(run));
  std::string restart, stopped;
  int failed = 0;
  for (const auto& f : findings) {
    if (findingKindName(f.kind) == "restart") restart = f.evidence;
    if (findingKindName(f.kind) == "ranks_stopped") stopped = f.evidence + " " + std::to_string(f.ranks.at(0));
    failed += findingKindName(f.kind) == "rank_failed";
  }
  CHECK(failed == 1);  // the culprit only; rank 0 was stopped because of it
  CHECK_THAT(stopped, Catch::Contains("1 rank(s) were stopped") && Catch::EndsWith(" 0"));
  CHECK_THAT(restart,
             Catch::Contains("attempt 0 failed after step 22; attempt 1 resumed from the checkpoint at step 20: "
                             "3 step(s) (48 samples, about 0.30 s of training)"));
  fs::remove_all(dir);
}

TEST_CASE("a lost host is the finding to fix first; a restart on fewer ranks says so", "[profiler][analysis]") {
  auto run = makeRun(4, 10, 8, [](int) { return RankShape{1, 3, 5, 1, 5}; });
  run.lostHost = "sim1";
  for (int r = 0; r < 4; ++r) {
    ddp::RankExitRecord e;
    e.rank = r;
    e.host = r < 2 ? "sim0" : "sim1";
    e.status = r < 2 ? ddp::RankStatus::kCollateral : ddp::RankStatus::kLost;
    e.workerPid = 100 + r;                              // every worker said hello
    if (r == 1) e.signal = 15, e.stopRequested = true;  // rank 0 was killed before its record was written
    run.exits.push_back(e);
  }
  auto findings = diagnose(run, analyseTimings(run));
  REQUIRE(!findings.empty());
  CHECK(findingKindName(findings.front().kind) == "host_lost");
  CHECK(findings.front().ranks == std::vector<int>{2, 3});
  CHECK_THAT(findings.front().evidence, Catch::StartsWith("host sim1 was lost: rank(s) 2, 3 there stopped answering"));
  std::vector<int> stopped;
  for (const auto& f : findings)
    if (findingKindName(f.kind) == "ranks_stopped") stopped = f.ranks;
  CHECK(stopped == std::vector<int>{0, 1});
  for (auto& e : run.exits)
    if (e.host == "sim1") e.workerPid = -1;  // none of sim1's workers reached the launcher
  CHECK_THAT(diagnose(run, analyseTimings(run)).front().evidence,
             Catch::StartsWith("host sim1 never came up: none of its ranks (2, 3) reached the launcher"));

  run.lostHost.reset();
  run.exits.clear();
  AttemptSteps before, after;
  before.attempt = 0, before.firstStep = 0, before.lastStep = 34, before.ranks = 4, before.lostHost = "sim1";
  after.attempt = 1, after.firstStep = 30, after.lastStep = 199, after.ranks = 2;
  run.attempts = {before, after};
  std::string restart;
  for (const auto& f : diagnose(run, analyseTimings(run)))
    if (findingKindName(f.kind) == "restart") restart = f.evidence;
  CHECK_THAT(restart, Catch::StartsWith("attempt 0 lost host sim1 after step 34; attempt 1 resumed from the "
                                        "checkpoint at step 30 with 2 ranks instead of 4: 5 step(s)"));
}

TEST_CASE("utilisation: GPUs idle while their rank waits, and fake-busy GPUs", "[profiler][analysis]") {
  // Both ranks wait 5 of 15 ms for communication (comm_wait) and 1 ms for data.
  auto run = makeRun(2, 10, 8, [](int) { return RankShape{1, 3, 5, 1, 5}; });
  for (int i = 0; i < 6; ++i) {
    run.utilisation[0].push_back(ddp::test::sampleAt(1'000'000 + i * 500'000, 80, 100, 20.0, 10.0, 900.0));  // idle GPU
    run.utilisation[1].push_back(
        ddp::test::sampleAt(1'000'000 + i * 500'000, 95, 100, 97.0, 60.0, 900.0));  // "busy" GPU
  }
  const auto u = analyseUtilisation(run);
  REQUIRE(u.size() == 2);
  CHECK(u[0].samples == 6);
  CHECK(*u[0].gpuUtilPctMean == Approx(20));
  CHECK(u[1].cpuPctMean == Approx(95));
  auto findings = diagnose(run, analyseTimings(run));
  std::string idle, fake;
  for (const auto& f : findings) {
    if (findingKindName(f.kind) == "gpu_idle") idle = f.evidence + " " + std::to_string(f.ranks.at(0));
    if (findingKindName(f.kind) == "gpu_fake_busy") fake = f.evidence + " " + std::to_string(f.ranks.at(0));
  }
  CHECK_THAT(idle, Catch::StartsWith("rank 0's GPU was busy 20 % of the time") && Catch::EndsWith(" 0"));
  CHECK_THAT(fake, Catch::StartsWith("rank 1's GPU shows 97 % utilisation") && Catch::EndsWith(" 1"));
  // CPU-only samples: no GPU finding.
  for (auto& [rank, samples] : run.utilisation)
    for (auto& s : samples) s.gpuUtilPct.reset();
  for (const auto& f : diagnose(run, analyseTimings(run)))
    CHECK(findingKindName(f.kind).rfind("gpu_", 0) == std::string::npos);
}
