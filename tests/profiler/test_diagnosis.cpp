// The diagnosis on causes from outside the program, constructed with known answers: a host
// with more ranks than cores, a busy process on one rank's core, a CPU quota, a rank stopped
// and continued, a throttled GPU; the verdict, the order of the findings and consistent
// statistics. Communication and the network: test_diagnosis_comm.cpp.
#include "ddp/profiler/diagnosis/findings.hpp"
#include "ddp/profiler/render/report.hpp"
#include "profiler/constructed_runs.hpp"
#include "support/run_records.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace ddp::profiler;
using namespace ddp::profiler::constructed;
using Catch::Contains;
using ddp::Phase;
using ddp::StepRecord;
using ddp::UtilSample;

namespace {

// A sample of `rank` 200 ms into its step `rec` that saw its process stopped (state T).
void seenStopped(RunData& run, int rank, const StepRecord& rec) {
  UtilSample u;
  u.rank = rank;
  u.tUnixUs = rec.startUnixUs + 200'000;
  u.stopped = true;
  run.utilisation[rank].push_back(u);
}

}  // namespace

TEST_CASE("four ranks on two cores: contention first, not the network", "[profiler][diagnosis]") {
  // Everything is slow and mostly waiting: what the main job on a 2-core machine looks like.
  auto run = syncRun(
      4, 40, [](int r, int) { return 10.0 + r; }, 12.0);
  for (int r = 0; r < 4; ++r) {
    run.exits.push_back(ddp::test::exitOf(r, 0, std::nullopt, "vm", false));
    sample(run, r, 10, [](UtilSample& u, int) {
      u.cpus = "0-1";
      u.runDelayPct = 45;
    });
  }
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  CHECK(findingKindName(findings.front().kind) == "cpu_contention");
  CHECK(findings.front().severity == Severity::kCritical);
  CHECK(findings.front().confidence == Confidence::kHigh);
  CHECK(findings.front().ranks == std::vector<int>{0, 1, 2, 3});
  CHECK_THAT(findings.front().evidence, Contains("4 ranks share 2 CPU(s) (0-1) on vm"));
  CHECK_THAT(findings.front().evidence, Contains("it explains the comm_bound finding"));
  CHECK(kinds(findings).find("comm_bound") == std::string::npos);  // folded into the cause
  const auto t = analyseTimings(run);
  const Report report{run, t, findings};
  CHECK_THAT(renderReportText(report),
             Contains("of the run is lost: ") && Contains("; fix first: cpu_contention (ranks 0-3), high confidence"));
}

TEST_CASE("a busy process on rank 1's core: contention names rank 1 and the process", "[profiler][diagnosis]") {
  auto run = syncRun(2, 60, [](int r, int s) { return r == 1 ? 20.0 + (s % 7 == 0 ? 60 : 0) : 10.0; });
  sample(run, 0, 12, [](UtilSample& u, int) {
    u.cpus = "0";
    u.runDelayPct = 1;
  });
  sample(run, 1, 12, [](UtilSample& u, int) {
    u.cpus = "1";
    u.runDelayPct = 48;
    u.cpuPct = 51;
    u.others = {{4242, "sh", 97.5, "1"}};
  });
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  const auto& first = findings.front();
  CHECK(findingKindName(first.kind) == "cpu_contention");
  CHECK(first.ranks == std::vector<int>{1});
  CHECK(first.confidence == Confidence::kHigh);
  CHECK_THAT(first.evidence,
             Contains("rank 1 waited for a CPU 48 %") && Contains("sh (pid 4242, 98 % CPU on CPU(s) 1)"));
  CHECK_THAT(first.evidence, Contains("the others waited"));
  CHECK_THAT(first.fix, Contains("move sh off the CPU(s) of rank 1"));
  CHECK(kinds(findings).find("straggler") == std::string::npos);  // the straggler is the contended rank
  CHECK(kinds(findings).find("comm_bound") == std::string::npos);
}

TEST_CASE("the same busy process on rank 0's core names rank 0, not the network", "[profiler][diagnosis]") {
  // Rank 0 stalls for seconds; the others' comm_wait is long, but the transfer itself is short.
  auto run = syncRun(2, 60, [](int r, int s) { return r == 0 ? (s % 10 == 3 ? 3700.0 : 30.0) : 10.0; });
  sample(run, 0, 30, [](UtilSample& u, int) {
    u.cpus = "0";
    u.runDelayPct = 52;
    u.others = {{777, "stress", 99, "0"}};
  });
  sample(run, 1, 30, [](UtilSample& u, int) {
    u.cpus = "1";
    u.runDelayPct = 0.5;
  });
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  CHECK(findingKindName(findings.front().kind) == "cpu_contention");
  CHECK(findings.front().ranks == std::vector<int>{0});
  CHECK(kinds(findings).find("comm_bound") == std::string::npos);
  CHECK(kinds(findings).find("stalls") != std::string::npos);  // the symptom, after its cause
}

TEST_CASE("a CPU quota on one rank is named with the quota", "[profiler][diagnosis]") {
  auto run = syncRun(2, 40, [](int r, int) { return r == 1 ? 19.0 : 10.0; });
  sample(run, 1, 10, [](UtilSample& u, int) {
    u.throttledPct = 45;
    u.cpuQuota = 0.5;
    u.runDelayPct = 2;
  });
  const auto findings = findingsOf(run);
  REQUIRE_FALSE(findings.empty());
  CHECK(findingKindName(findings.front().kind) == "cpu_contention");
  CHECK_THAT(findings.front().evidence, Contains("held back by its cgroup's CPU quota (0.5 cores) 45 %"));
  CHECK(findings.front().severity == Severity::kCritical);
}

TEST_CASE("ranks short of CPU for the same reason make one finding that names them all", "[profiler][diagnosis]") {
  // Each rank on its own core, each core shared with the same kind of busy loop: two busy loops
  // of one program, one finding for ranks 0 and 1.
  auto run = syncRun(2, 40, [](int r, int) { return r == 1 ? 21.0 : 20.0; });
  for (int r = 0; r < 2; ++r)
    sample(run, r, 10, [r](UtilSample& u, int) {
      u.cpus = std::to_string(r);
      u.runDelayPct = 40 + r;
      u.others = {{900 + r, "yes", 99, std::to_string(r)}};
    });
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  CHECK(std::count_if(findings.begin(), findings.end(),
                      [](const Finding& f) { return f.kind == FindingKind::kCpuContention; }) == 1);
  CHECK(findings.front().ranks == std::vector<int>{0, 1});
  CHECK_THAT(findings.front().evidence, Contains("ranks 0, 1 waited for a CPU 40–41 % of their time") &&
                                            Contains("yes (pid 900") && Contains("yes (pid 901"));
}

TEST_CASE("start-up's CPU wait is not the steps' contention", "[profiler][diagnosis]") {
  // Loading libraries waits for a CPU before the first step; the steps themselves do not.
  auto run = syncRun(2, 200, [](int, int) { return 10.0; });
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 4; ++i) {
      UtilSample u;
      u.rank = r;
      u.tUnixUs = kStart - 1'500'000 + i * 500'000;  // the last one ends at the first step
      u.runDelayPct = 90;
      u.cpus = std::to_string(r);
      run.utilisation[r].push_back(u);
    }
    sample(run, r, 4, [r](UtilSample& u, int) {
      u.tUnixUs += 500'000;  // within the steps (200 steps of 11 ms)
      u.runDelayPct = 2;
      u.cpus = std::to_string(r);
    });
  }
  const auto t = analyseTimings(run);
  REQUIRE(t.utilisation.size() == 2);
  CHECK(t.utilisation[0].samples == 4);
  CHECK(t.utilisation[0].runDelayPctMean == Approx(2));
  CHECK(kinds(diagnose(run, t)).find("cpu_contention") == std::string::npos);
  CHECK(analyseUtilisation(run).front().samples == 8);  // without a window: every sample
}

TEST_CASE("a rank's own threads on its one core: threads_oversubscribed, not contention", "[profiler][diagnosis]") {
  // Each rank pinned to a core of its own, using all of it, its compute thread waiting for its
  // own busy-polling communication thread; nothing outside the job runs there.
  auto run = syncRun(2, 40, [](int, int) { return 10.0; });
  twoThreadsOnOwnCore(run, 43);
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  CHECK(findingKindName(findings.front().kind) == "threads_oversubscribed");
  CHECK(findings.front().ranks == std::vector<int>{0, 1});
  CHECK_THAT(findings.front().evidence, Contains("ranks 0, 1 ran 2 busy threads on 1 CPU(s) each, and each one's "
                                                 "busiest thread waited for a CPU 43 % of the time"));
  CHECK_THAT(findings.front().fix, Contains("OMP_NUM_THREADS"));
  CHECK(kinds(findings).find("cpu_contention") == std::string::npos);
  // One busy thread a core: then something else has the rest of the core.
  for (auto& [rank, samples] : run.utilisation)
    for (auto& u : samples) u.busyThreads = 1, u.cpuPct = 50;
  CHECK(findingKindName(findingsOf(run).front().kind) == "cpu_contention");
}

namespace {

// Every rank's timings source: Python, one training DataLoader with `workers` workers.
void pythonLoaders(RunData& run, int workers) {
  for (const auto& [rank, records] : run.timings) {
    ddp::TimingSource s;
    s.rank = rank;
    s.source = "python-auto";
    s.runtime = "torch 1.13.0 (Python 3.11.2)";
    s.device = "cpu";
    ddp::DataLoaderFacts loader;
    loader.numWorkers = workers;
    loader.batches = static_cast<int64_t>(records.size());
    s.dataloaders = {loader};
    run.sources[rank] = s;
  }
}

// Data takes `dataMs(rank)` of each step of 10 ms compute.
RunData dataRun(const std::function<double(int)>& dataMs) {
  auto run = syncRun(2, 40, [&](int r, int) { return 10.0 + dataMs(r); });
  for (auto& [rank, records] : run.timings)
    for (auto& rec : records) {
      const double data = dataMs(rank);
      rec.phasesMs[Phase::kData] = data;
      rec.phasesMs[Phase::kForward] = 3;
      rec.phasesMs[Phase::kBackward] = 5;
      rec.phasesMs[Phase::kOptimizer] = 2;
    }
  return run;
}

}  // namespace

TEST_CASE("a Python loader with num_workers=0 starving every rank: dataloader_starved", "[profiler][diagnosis]") {
  auto run = dataRun([](int r) { return r == 1 ? 16.0 : 12.0; });
  pythonLoaders(run, 0);
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  CHECK(findingKindName(findings.front().kind) == "dataloader_starved");
  CHECK_THAT(findings.front().evidence, Contains("num_workers=0"));
  CHECK_THAT(findings.front().fix, Contains("num_workers=N"));
  CHECK(kinds(findings).find("straggler") == std::string::npos);  // folded: every loader is too slow
  // The same run from a program that says nothing of its loaders: data_bound.
  run.sources.clear();
  CHECK(findingKindName(findingsOf(run).front().kind) == "data_bound");
}

TEST_CASE("one rank's slow data: the straggler, whose time goes to data", "[profiler][diagnosis]") {
  auto run = dataRun([](int r) { return r == 1 ? 14.0 : 0.2; });
  pythonLoaders(run, 0);
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  CHECK(findingKindName(findings.front().kind) == "straggler");
  CHECK(findings.front().ranks == std::vector<int>{1});
  CHECK_THAT(findings.front().evidence,
             Contains("its extra time is in data: 14.0 ms a step against 0.2 ms on the others"));
  CHECK(kinds(findings).find("dataloader_starved") == std::string::npos);
}

TEST_CASE("the report names the timings' source, or why there are none", "[profiler][diagnosis]") {
  auto run = syncRun(2, 20, [](int, int) { return 10.0; });
  pythonLoaders(run, 2);
  run.sources[1].notes = {"2 or more optimizers update the DDP models' parameters"};
  const auto t = analyseTimings(run);
  const Report report{run, t, diagnose(run, t)};
  const auto text = renderReportText(report);
  CHECK_THAT(text, Contains("timings: ddprun's automatic PyTorch instrumentation, torch 1.13.0 (Python 3.11.2), cpu "
                            "on ranks 0, 1"));
  CHECK_THAT(text, Contains("note (rank 1): 2 or more optimizers"));
  RunData none;
  none.dir = "constructed";
  for (int r = 0; r < 2; ++r) {
    ddp::TimingSource s;
    s.rank = r;
    s.source = "python-auto";
    s.instrumented = false;
    s.reason = "the program never imported torch";
    none.sources[r] = s;
  }
  const auto nt = analyseTimings(none);
  const auto said = renderReportText(Report{none, nt, diagnose(none, nt)});
  CHECK_THAT(said, Contains("verdict: not measured: no step timings: the Python instrumentation could not follow the "
                            "program (ranks 0, 1: the program never imported torch)"));
  CHECK_THAT(said, !Contains("samples/s") && !Contains("imbalance 1"));
}

TEST_CASE("a rank stopped and continued: stalls name it and say it was stopped", "[profiler][diagnosis]") {
  // Rank 1 is stopped for 400 ms in 8 of 80 steps of about 58 ms.
  auto stopped = [](int s) { return s % 10 == 5; };
  auto run = syncRun(2, 80, [&](int r, int s) { return r == 1 && stopped(s) ? 457.0 : 57.0; });
  const auto& steps = run.timings[1];
  for (const auto& rec : steps)
    if (stopped(static_cast<int>(rec.step))) seenStopped(run, 1, rec);
  const auto t = analyseTimings(run);
  CHECK(t.stalls.size() == 8);
  const auto findings = diagnose(run, t);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  const auto& first = findings.front();
  CHECK(findingKindName(first.kind) == "stalls");
  CHECK(first.ranks == std::vector<int>{1});
  CHECK(first.confidence == Confidence::kHigh);
  CHECK(first.severity == Severity::kWarning);
  CHECK_THAT(first.evidence, Contains("8 steps stalled") && Contains("the others waited for rank 1") &&
                                 Contains("seen stopped (state T) during 8 of them"));
  CHECK_THAT(first.fix, Contains("SIGSTOP"));
}

TEST_CASE("a rank stopped inside the allreduce: the stall is its, not the peer's that computed longer",
          "[profiler][diagnosis]") {
  // Rank 1 is stopped for 400 ms after it launched its gradients, in 8 of 80 steps: both ranks
  // wait in comm_wait, and rank 0 happens to compute 1 ms longer in those steps.
  auto stopped = [](int s) { return s % 10 == 5; };
  auto run = syncRun(2, 80, [&](int r, int s) { return r == 0 && stopped(s) ? 58.0 : 57.0; });
  for (auto& [rank, records] : run.timings)
    for (auto& rec : records)
      if (stopped(static_cast<int>(rec.step))) {
        rec.phasesMs[Phase::kCommWait] += 400;
        rec.stepMs += 400;
        if (rank == 1) seenStopped(run, 1, rec);
      }
  const auto t = analyseTimings(run);
  REQUIRE(t.stalls.size() == 8);
  for (const auto& stall : t.stalls) {
    CHECK(stall.rank == 1);
    CHECK(stall.stopped);
    CHECK(stall.phase == Phase::kCommWait);
  }
  const auto findings = diagnose(run, t);
  REQUIRE_FALSE(findings.empty());
  CHECK(findingKindName(findings.front().kind) == "stalls");
  CHECK(findings.front().ranks == std::vector<int>{1});
  CHECK_THAT(findings.front().evidence, Contains("held up inside the gradient allreduce itself"));
}

TEST_CASE("a GPU held down by its power limit", "[profiler][diagnosis]") {
  auto run = syncRun(1, 20, [](int, int) { return 10.0; });
  sample(run, 0, 10, [](UtilSample& u, int i) {
    u.gpuUtilPct = 99;
    u.gpuSmClockMhz = 1100;
    u.gpuSmClockMaxMhz = 1980;
    if (i % 2) u.gpuThrottle = {"sw_power_cap"};
  });
  const auto findings = findingsOf(run);
  REQUIRE_FALSE(findings.empty());
  CHECK(findingKindName(findings.front().kind) == "gpu_throttled");
  CHECK_THAT(findings.front().evidence, Contains("sw_power_cap") && Contains("SM clock 1100 of 1980 MHz"));
}

TEST_CASE("every per-rank figure is at most its rank's step figure, with outliers", "[profiler][diagnosis]") {
  auto run = syncRun(3, 50, [](int r, int s) { return s % 9 == 0 ? 400.0 * (r + 1) : 10.0 + r; });
  const auto t = analyseTimings(run);
  for (const auto& r : t.ranks) {
    INFO("rank " << r.rank);
    for (Phase p : ddp::kPhases) CHECK(r.phaseMsMedian[p] <= r.stepMsMedian);
    CHECK(r.computeMsMedian <= r.stepMsMedian);
    CHECK(r.peerWaitMsMedian <= r.phaseMsMedian[Phase::kCommWait] + 1e-9);
  }
}

TEST_CASE("the verdict: healthy, or nothing measured", "[profiler][diagnosis]") {
  auto run = syncRun(
      2, 30, [](int, int) { return 20.0; }, 0.5);
  auto t = analyseTimings(run);
  auto findings = diagnose(run, t);
  CHECK(std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity != Severity::kInfo; }));
  CHECK_THAT(renderReportText({run, t, findings}), Contains("verdict: healthy: ") && Contains("of the run is lost") &&
                                                       Contains("(under 15 %); the ranks compute"));
  RunData empty;
  empty.dir = "nothing";
  empty.exits.push_back(ddp::test::exitOf(0, 0, std::nullopt, "h", false));
  t = analyseTimings(empty);
  findings = diagnose(empty, t);
  const auto text = renderReportText({empty, t, findings});
  CHECK_THAT(text, Contains("verdict: not measured: no step timings (timings/*.jsonl is empty)"));
  CHECK(text.find("0.0 samples/s") == std::string::npos);
  CHECK(text.find("imbalance 1.00") == std::string::npos);
}

namespace {

// Every record's cpu_ms: `onCpu` of its phases' wall time, scaled to `asIfMs` ms of compute (a
// thread that sleeps through the rest).
void threadCpu(RunData& run, int rank, double onCpu, std::optional<double> asIfMs = std::nullopt) {
  for (auto& rec : run.timings[rank]) {
    auto& cpu = rec.cpuMs.emplace();
    const double scale = asIfMs ? *asIfMs / (rec.stepMs - rec.phasesMs[Phase::kCommWait]) : 1;
    for (Phase p : ddp::kPhases) cpu[p] = onCpu * scale * rec.phasesMs[p];
  }
}

}  // namespace

TEST_CASE("a straggler whose every phase ran slower on the CPU: its core, not its work", "[profiler][diagnosis]") {
  auto run = syncRun(2, 20, [](int r, int) { return r == 1 ? 14.0 : 10.0; });
  for (int r : {0, 1}) threadCpu(run, r, 0.97);
  auto straggler = [](const RunData& from) {
    const auto findings = findingsOf(from);
    INFO(kinds(findings));
    REQUIRE_FALSE(findings.empty());
    REQUIRE(findingKindName(findings.front().kind) == "straggler");
    CHECK(findings.front().ranks == std::vector<int>{1});
    return findings.front();
  };
  const auto f = straggler(run);
  CHECK_THAT(f.evidence,
             Contains("every phase of its step grew alike (data ×1.40, forward ×1.40, backward ×1.40, "
                      "optimizer ×1.40) and its training thread was on the CPU all that time (13.6 ms of "
                      "CPU time a step against 9.7 ms on the others): the same work ran slower on its core"));
  CHECK_THAT(f.fix, Contains("another guest on the same physical core"));
  CHECK_THAT(f.confirm, Contains("rank 1 pinned to another core"));
  // No verdict where the thread's CPU time is not the rank's work: GPUs (sampled, or the source
  // record's device), a rank without cpu_ms, threads off the CPU for most of the others' compute.
  auto changed = [&](const std::function<void(RunData&)>& change) {
    auto variant = run;
    change(variant);
    return straggler(variant).evidence;
  };
  CHECK_THAT(changed([](RunData& v) { sample(v, 0, 4, [](UtilSample& u, int) { u.gpuUtilPct = 90; }); }),
             !Contains("CPU time"));
  CHECK_THAT(changed([](RunData& v) { v.sources[1].device = "cuda:1"; }), !Contains("CPU time"));
  CHECK_THAT(changed([](RunData& v) { v.timings[0][5].cpuMs.reset(); }), !Contains("CPU time"));
  CHECK_THAT(changed([](RunData& v) { threadCpu(v, 0, 0.4), threadCpu(v, 1, 0.4); }), !Contains("CPU"));
}

TEST_CASE("a straggler whose thread used no more CPU than the others: its extra time off the CPU",
          "[profiler][diagnosis]") {
  auto run = syncRun(2, 20, [](int r, int) { return r == 1 ? 14.0 : 10.0; });
  threadCpu(run, 0, 0.97);
  threadCpu(run, 1, 0.97, 10.0);
  const auto findings = findingsOf(run);
  INFO(kinds(findings));
  REQUIRE_FALSE(findings.empty());
  REQUIRE(findingKindName(findings.front().kind) == "straggler");
  CHECK_THAT(findings.front().evidence,
             Contains("its training thread used no more CPU than the others' (9.7 ms a step against 9.7 ms): the extra "
                      "time was spent off the CPU"));
  CHECK_THAT(findings.front().evidence, !Contains("grew alike"));
  CHECK_THAT(findings.front().fix, !Contains("physical core"));
}
