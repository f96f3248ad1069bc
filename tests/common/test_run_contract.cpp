// The run contract as types: the run directory's layout, exit records, run.json and
// utilisation samples, each through its one toJson/fromJson (or format/parse) pair.
#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"
#include "ddp/common/rank_exit.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/common/run_manifest.hpp"
#include "ddp/common/timing_source.hpp"
#include "ddp/common/util_sample.hpp"

#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace ddp;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

fs::path freshDir(const std::string& name) {
  auto dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

void touch(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "x\n";
}

}  // namespace

TEST_CASE("the layout spells every path of a run directory", "[common][layout]") {
  const RunLayout run("/runs/a/");  // a trailing slash is dropped
  CHECK(run.root() == "/runs/a");
  CHECK(run.manifest() == "/runs/a/run.json");
  CHECK(run.rankLog(12) == "/runs/a/ranks/rank-00012.log");
  CHECK(run.rankExit(3) == "/runs/a/ranks/rank-00003.exit.json");
  CHECK(run.rankStacks(3) == "/runs/a/ranks/rank-00003.stacks.txt");
  CHECK(run.timings(7) == "/runs/a/timings/rank-00007.jsonl");
  CHECK(run.progress(7) == "/runs/a/timings/rank-00007.progress");
  CHECK(run.utilisation(123456) == "/runs/a/util/rank-123456.jsonl");
  CHECK(run.ncclDebugFile() == "/runs/a/nccl/%h.%p.log");
  CHECK(run.report(ReportFile::kText) == "/runs/a/report.txt");
  CHECK(run.report(ReportFile::kJson) == "/runs/a/report.json");
  CHECK(run.report(ReportFile::kMarkdown) == "/runs/a/report.md");
  CHECK(run.report(ReportFile::kHtml) == "/runs/a/report.html");
  CHECK(run.report(ReportFile::kTrace) == "/runs/a/trace.json");
  CHECK(run.attempt(2).timings(0) == "/runs/a/attempts/2/timings/rank-00000.jsonl");
  CHECK(RunLayout::attemptRelative(2) == "attempts/2");
  CHECK(progressPathFor("/x/mine.jsonl") == "/x/mine.progress");
  CHECK(progressPathFor("/x/mine.txt") == "/x/mine.txt.progress");
}

TEST_CASE("the layout lists what a reader looks for, sorted", "[common][layout]") {
  const auto dir = freshDir("ddp-layout");
  const RunLayout run(dir.string());
  CHECK(run.timingsFiles().empty());
  CHECK(run.attempts().empty());
  CHECK_FALSE(run.hasManifest());
  for (const auto& p :
       {run.timings(1), run.timings(0), run.rankExit(0), run.rankLog(0), run.utilisation(0),
        dir.string() + "/nccl/h.1.log", dir.string() + "/ddpbench-mpi.json", dir.string() + "/other.json",
        run.manifest(), run.attempt(10).timings(0), run.attempt(2).timings(0)})
    touch(p);
  fs::create_directories(dir / "attempts" / "notes");  // not an attempt
  CHECK(run.hasManifest());
  CHECK(run.timingsFiles() == std::vector<std::string>{run.timings(0), run.timings(1)});
  CHECK(run.exitFiles() == std::vector<std::string>{run.rankExit(0)});
  CHECK(run.utilisationFiles() == std::vector<std::string>{run.utilisation(0)});
  CHECK(run.ncclLogs() == std::vector<std::string>{dir.string() + "/nccl/h.1.log"});
  CHECK(run.benchResults() == std::vector<std::string>{dir.string() + "/ddpbench-mpi.json"});
  CHECK(run.attempts() == std::vector<int>{2, 10});
  fs::remove_all(dir);
}

TEST_CASE("keeping an attempt moves ranks, timings, util and nccl, and makes them anew", "[common][layout]") {
  const auto dir = freshDir("ddp-keep");
  const RunLayout run(dir.string());
  run.makeRankDirectories(true);
  for (const char* sub : {"ranks", "timings", "util", "nccl"}) CHECK(fs::is_directory(dir / sub));
  touch(run.rankLog(0));
  touch(run.timings(0));
  touch(run.utilisation(0));
  touch(dir / "nccl" / "h.1.log");
  touch(run.manifest());
  CHECK(run.keepAttempt(0, true) == "attempts/0");
  const auto kept = run.attempt(0);
  CHECK(fs::exists(kept.rankLog(0)));
  CHECK(fs::exists(kept.timings(0)));
  CHECK(fs::exists(kept.utilisation(0)));  // util/ too: earlier attempts' utilisation is kept
  CHECK(kept.ncclLogs().size() == 1);
  CHECK(run.timingsFiles().empty());
  CHECK(run.utilisationFiles().empty());
  CHECK(fs::is_directory(run.utilDir()));
  CHECK(run.hasManifest());  // run.json is the run's, not the attempt's
  // Without profiling only ranks/ and timings/ are made again.
  CHECK(run.keepAttempt(1, false) == "attempts/1");
  CHECK_FALSE(fs::exists(run.utilDir()));
  CHECK(fs::is_directory(run.timingsDir()));
  CHECK(run.attempts() == std::vector<int>{0, 1});
  fs::remove_all(dir);
}

TEST_CASE("an unwritable run directory is a ConfigError naming it", "[common][layout]") {
  CHECK_THROWS_WITH(RunLayout("/proc/no-run").makeRankDirectories(false),
                    Contains("run directory /proc/no-run/ranks: cannot create"));
}

TEST_CASE("an exit record survives toJson and fromJson, every field", "[common][exit]") {
  RankExitRecord r;
  r.rank = 5;
  r.host = "node-b";
  r.workerPid = 100;
  r.programPid = 101;
  r.started = true;
  r.signal = 9;
  r.startUnixUs = 1'000'000;
  r.endUnixUs = 3'500'000;
  r.peakRssKb = 2048;
  r.stopRequested = true;
  r.status = RankStatus::kCollateral;
  const auto j = toJson(r);
  CHECK(j["duration_s"] == 2.5);
  CHECK(j["exit_code"].is_null());
  CHECK(j["status"] == "collateral");
  CHECK(j["culprit"] == false);
  const auto back = rankExitFromJson(j);
  CHECK(back.rank == 5);
  CHECK(back.host == "node-b");
  CHECK(back.workerPid == 100);
  CHECK(back.programPid == 101);
  CHECK(back.started);
  CHECK_FALSE(back.exitCode);
  CHECK(back.signal == 9);
  CHECK(back.startUnixUs == 1'000'000);
  CHECK(back.endUnixUs == 3'500'000);
  CHECK(back.peakRssKb == 2048);
  CHECK(back.stopRequested);
  CHECK(back.status == RankStatus::kCollateral);
  CHECK(back.failed());
  CHECK_FALSE(back.failedOnItsOwn());
  for (auto status : {RankStatus::kOk, RankStatus::kFailed, RankStatus::kCulprit, RankStatus::kCollateral,
                      RankStatus::kStopped, RankStatus::kHung, RankStatus::kLost})
    CHECK(parseRankStatus(rankStatusName(status)) == status);
}

TEST_CASE("an exit record from another writer: the flags alone", "[common][exit]") {
  const auto r = rankExitFromJson(nlohmann::json{{"rank", 2}, {"exit_code", 3}, {"culprit", true}});
  CHECK(r.rank == 2);
  CHECK(r.exitCode == 3);
  CHECK(r.culprit());
  CHECK(r.failedOnItsOwn());
  CHECK(r.exitStatus().describe() == "exit code 3");
}

TEST_CASE("a malformed exit record names the field", "[common][exit]") {
  using nlohmann::json;
  CHECK_THROWS_WITH(rankExitFromJson(json::array()), Contains("not a JSON object"));
  CHECK_THROWS_WITH(rankExitFromJson(json{{"host", "a"}}), Contains("missing field \"rank\""));
  CHECK_THROWS_WITH(rankExitFromJson(json{{"rank", "1"}}), Contains("field \"rank\" must be an integer"));
  CHECK_THROWS_WITH(rankExitFromJson(json{{"rank", -2}}), Contains("field \"rank\" is -2"));
  CHECK_THROWS_WITH(rankExitFromJson(json{{"rank", 1}, {"status", "sleeping"}}),
                    Contains("'sleeping', not a rank status"));
  CHECK_THROWS_WITH(rankExitFromJson(json{{"rank", 1}, {"stop_requested", 1}}),
                    Contains("\"stop_requested\" must be true or false"));
  CHECK_THROWS_WITH(rankExitFromJson(json{{"schema", 2}, {"rank", 1}}), Contains("schema version 2"));
}

TEST_CASE("run.json survives toJson and fromJson, every field", "[common][manifest]") {
  RunManifest m;
  m.ddprunVersion = "0.1.0";
  m.command = {"/bin/train", "--model", "mlp"};
  m.ddprunArgv = {"ddprun", "-np", "2", "/bin/train"};
  m.mpirunArgv = {"mpirun", "-np", "2"};
  m.np = 2;
  m.hosts = {{"a", 8}, {"b", 8}};
  m.launchHost = "a";
  m.masterAddr = "10.0.0.1";
  m.masterPort = 29500;
  m.runDir = "/runs/x";
  m.backend = "gloo";
  m.startUnixUs = 1'796'000'000'000'000;
  m.attempt = 1;
  m.maxRestarts = 2;
  m.earlierAttempts = {{0, 7, "rank 1 failed: exit code 7", "attempts/0"}};
  m.instance = {{"name", "ecs.gn7-c13g1.26xlarge"}, {"family", "gn7"}};
  m.rankEnvironment = {{"MASTER_PORT", "29500"}};
  m.environment = {{"PATH", "/usr/bin"}};
  nlohmann::json running = toJson(m);
  CHECK(running["status"] == "running");
  CHECK_FALSE(running.contains("end_unix_us"));
  CHECK(running["start"] == "2026-11-30T00:53:20Z");
  m.status = RunStatus::kHung;
  m.endUnixUs = m.startUnixUs + 4'250'000;
  m.exitCode = 124;
  m.culprit = 1;
  m.reason = "no progress";
  m.mpirunExit = "killed by SIGKILL";
  m.hang = HangRecord{{1}, m.startUnixUs + 4'000'000, m.startUnixUs + 4'200'000};
  m.ranks = {{0, "a", 10, RankStatus::kCollateral, 143, std::nullopt},
             {1, "b", 11, RankStatus::kHung, std::nullopt, 9}};
  m.versions = Versions{"0.1.0", "4.1.4", "1.13.0", std::nullopt, false};
  const auto j = toJson(m);
  CHECK(j["duration_s"] == 4.25);
  const auto back = runManifestFromJson(j);
  CHECK(toJson(back) == j);  // every field, both ways
  CHECK(back.instanceName() == "ecs.gn7-c13g1.26xlarge");
  CHECK(back.ranks.at(1).status == RankStatus::kHung);
  CHECK(back.hang->ranks == std::vector<int>{1});
  CHECK(back.versions->libtorchCuda == false);
  CHECK_FALSE(back.versions->nccl);
}

TEST_CASE("run.json from another writer: schema, np and command", "[common][manifest]") {
  const auto m = runManifestFromJson(nlohmann::json::parse(
      R"({"schema": 1, "command": ["/usr/local/bin/train", "--model", "cnn"], "np": 1, "hosts": [{"host": "node-a", "slots": 8}]})"));
  CHECK(m.np == 1);
  CHECK(m.command.size() == 3);
  CHECK(m.hosts.at(0).host == "node-a");
  CHECK_FALSE(m.instanceName());
  CHECK_FALSE(m.endUnixUs);
}

TEST_CASE("a malformed run.json names the field", "[common][manifest]") {
  auto with = [](const char* key, nlohmann::json value) {
    nlohmann::json j = {{"schema", 1}, {"np", 2}, {"command", {"x"}}};
    j[key] = std::move(value);
    return j;
  };
  CHECK_THROWS_WITH(runManifestFromJson(nlohmann::json{{"np", 1}}), Contains("missing field \"schema\""));
  CHECK_THROWS_WITH(runManifestFromJson(with("schema", 3)), Contains("schema version 3 is not supported"));
  CHECK_THROWS_WITH(runManifestFromJson(with("np", 0)), Contains("field \"np\" is 0, less than 1"));
  CHECK_THROWS_WITH(runManifestFromJson(with("command", "train")), Contains("field \"command\" must be an array"));
  CHECK_THROWS_WITH(runManifestFromJson(with("command", {1})), Contains("\"command\" must be an array of strings"));
  CHECK_THROWS_WITH(runManifestFromJson(with("status", "done")), Contains("'done', not a run status"));
  CHECK_THROWS_WITH(runManifestFromJson(with("hosts", {{{"slots", 1}}})), Contains("missing field \"host\""));
  CHECK_THROWS_WITH(runManifestFromJson(with("environment", {{"A", 1}})),
                    Contains("\"environment\" must be an object of strings"));
  CHECK_THROWS_WITH(
      runManifestFromJson(with("hang", {{"ranks", {"x"}}, {"detected_unix_us", 1}, {"stacks_done_unix_us", 1}})),
      Contains("type must be number"));
}

TEST_CASE("a utilisation sample survives format and parse", "[common][util]") {
  UtilSample s;
  s.rank = 3;
  s.tUnixUs = 1'796'000'000'000'000;
  s.cpuPct = 97.5;
  s.rssMib = 512.25;
  s.processes = 2;
  s.gpu = 1;
  s.gpuUtilPct = 88;
  s.gpuMemUtilPct = 12;
  s.gpuMemUsedMib = 40000;
  const auto back = parseUtilSample(formatUtilSample(s));
  CHECK(back.rank == 3);
  CHECK(back.tUnixUs == s.tUnixUs);
  CHECK(back.cpuPct == 97.5);
  CHECK(back.rssMib == 512.25);
  CHECK(back.processes == 2);
  CHECK(back.gpu == 1u);
  CHECK(back.gpuUtilPct == 88);
  CHECK(back.gpuMemUtilPct == 12);
  CHECK(back.gpuMemUsedMib == 40000);
  CHECK_FALSE(back.runDelayPct);
  // The scheduling, host and GPU-clock evidence.
  s.runDelayPct = 48.5;
  s.throttledPct = 12;
  s.cpuQuota = 0.4;
  s.preemptedPerS = 210;
  s.busyThreads = 3;
  s.cpus = "0-3,8";
  s.stopped = true;
  s.hostCpus = 16;
  s.hostBusyPct = 99;
  s.stealPct = 7;
  s.load1 = 17.5;
  s.runnable = 18;
  s.cpuPressurePct = 41.2;
  s.others = {{4242, "stress ng", 99.5, "1"}};
  s.links = {{"10.213.0.1", "10.213.0.3", 84.5, 7021.5}, {"fd00::1", "fd00::2", 0.25, 1}};
  s.gpuSmClockMhz = 1200;
  s.gpuSmClockMaxMhz = 1980;
  s.gpuPowerW = 700;
  s.gpuThrottle = {"sw_power_cap", "hw_slowdown"};
  const auto full = parseUtilSample(formatUtilSample(s));
  CHECK(formatUtilSample(full) == formatUtilSample(s));
  CHECK(full.busyThreads == 3);
  CHECK(full.others.size() == 1);
  CHECK(full.others.front().name == "stress ng");
  CHECK(full.gpuThrottle == std::vector<std::string>{"sw_power_cap", "hw_slowdown"});
  REQUIRE(full.links.size() == 2);
  CHECK(full.links[0].to == "10.213.0.3");
  CHECK(full.links[0].sendingMs == 7021.5);
  CHECK_THROWS_WITH(
      parseUtilSample(
          R"({"rank":0,"t_unix_us":5,"cpu_pct":1,"links":[{"from":"a","to":"b","sent_mib":-1,"sending_ms":1}]})"),
      Contains("cannot be negative"));
  CHECK_THROWS_WITH(parseUtilSample(R"({"rank":0,"t_unix_us":5,"cpu_pct":1,"cpus":"0-x"})"), Contains("0-x"));
  CHECK(parseCpuList("0-3,8") == std::vector<int>{0, 1, 2, 3, 8});
  CHECK(formatCpuList({8, 0, 1, 2, 3}) == "0-3,8");
  const auto cpuOnly = parseUtilSample(R"({"rank":0,"t_unix_us":5,"cpu_pct":1})");
  CHECK_FALSE(cpuOnly.gpuUtilPct);
  CHECK_THROWS_WITH(parseUtilSample(R"({"rank":0,"t_unix_us":5,"cpu)"), Contains("not JSON"));
  CHECK_THROWS_WITH(parseUtilSample(R"({"rank":0,"t_unix_us":5})"), Contains("missing field \"cpu_pct\""));
  CHECK_THROWS_WITH(parseUtilSample(R"({"rank":0,"t_unix_us":5,"cpu_pct":"a"})"),
                    Contains("\"cpu_pct\" must be a number"));
}

TEST_CASE("a timings source survives format and parse; the training loader is the busiest", "[common][timings]") {
  ddp::TimingSource s;
  s.rank = 2;
  s.source = "python-auto";
  s.runtime = "torch 1.13.0 (Python 3.11.2)";
  s.device = "cuda:0";
  s.notes = {"2 or more optimizers"};
  ddp::DataLoaderFacts eval, train;
  eval.batches = 10;
  train.numWorkers = 4;
  train.pinMemory = true;
  train.batchSize = 32;
  train.batches = 500;
  train.waitMs = 1234.5;
  train.datasetSize = 50000;
  s.dataloaders = {eval, train};
  const auto back = ddp::timingSourceFromJson(ddp::toJson(s));
  CHECK(ddp::toJson(back) == ddp::toJson(s));
  REQUIRE(back.busiestLoader() != nullptr);
  CHECK(back.busiestLoader()->numWorkers == 4);
  CHECK(back.busiestLoader()->datasetSize == 50000);
  ddp::TimingSource none;
  none.source = "python-auto";
  none.instrumented = false;
  none.reason = "no DistributedDataParallel model was built";
  const auto said = ddp::timingSourceFromJson(ddp::toJson(none));
  CHECK_FALSE(said.instrumented);
  CHECK(said.reason == none.reason);
  CHECK(said.busiestLoader() == nullptr);
  CHECK_THROWS_WITH(ddp::timingSourceFromJson(nlohmann::json{{"rank", 0}}), Contains("missing field \"source\""));
  CHECK_THROWS_WITH(ddp::timingSourceFromJson(
                        nlohmann::json{{"rank", 0}, {"source", "cpp"}, {"dataloaders", {{{"num_workers", "x"}}}}}),
                    Contains("num_workers"));
}

TEST_CASE("files: atomic writes leave nothing half-written, listings are sorted", "[common][files]") {
  const auto dir = freshDir("ddp-files");
  makeDirectories(dir.string(), "test directory");
  writeFileAtomically((dir / "b.json").string(), "{}");
  writeFileAtomically((dir / "a.json").string(), "[]");
  CHECK(listFiles(dir.string(), "", ".json") ==
        std::vector<std::string>{(dir / "a.json").string(), (dir / "b.json").string()});
  CHECK(listFiles(dir.string(), "b", ".json").size() == 1);
  CHECK(listFiles((dir / "none").string(), "", ".json").empty());
  CHECK_THROWS_WITH(writeFileAtomically((dir / "no" / "x").string(), "x"), Contains("cannot write"));
  CHECK(fs::directory_iterator(dir) != fs::directory_iterator());
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  CHECK_THROWS_WITH(makeDirectories("/proc/x", "run directory"), Contains("run directory /proc/x: cannot create"));
  fs::remove_all(dir);
}
