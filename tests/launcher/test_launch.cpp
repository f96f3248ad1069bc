// From the command line to the finished job, without mpirun: the CLI's one option table, the
// port reservation, the run directory, the restart loop and the verdict at the end
// (launcher/include/ddp/launcher/cli.hpp, launch.hpp, port.hpp; launcher/src/verdict.hpp).
#include "../../launcher/src/host_probe.hpp"
#include "../../launcher/src/io.hpp"
#include "../../launcher/src/job_manifest.hpp"
#include "../../launcher/src/verdict.hpp"
#include "ddp/common/environment.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/log.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/launcher/cli.hpp"
#include "ddp/launcher/doctor.hpp"
#include "ddp/launcher/port.hpp"
#include "support/run_records.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

using namespace ddp::launcher;
using Catch::Contains;
using ddp::RankStatus;
using ddp::RunStatus;
using ddp::test::endedAt;
namespace fs = std::filesystem;

namespace {

LaunchRequest parseLaunch(const std::vector<std::string>& args) {
  std::ostringstream out;
  auto command = parseCommandLine(args, out);
  REQUIRE(std::holds_alternative<LaunchRequest>(command));
  return std::get<LaunchRequest>(command);
}

fs::path freshDir(const std::string& name) {
  auto dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

}  // namespace

TEST_CASE("cli: ddprun's options end where PROGRAM begins", "[launcher][cli]") {
  auto r = parseLaunch(
      {"-np", "2", "--profile", "--run-dir", "runs/a", "-x", "A=1", "-x", "B", "prog", "-np", "3", "--profile"});
  CHECK(r.options.np == 2);
  CHECK(r.options.profile);
  CHECK(r.options.runDir == "runs/a");
  CHECK(r.options.exports == std::vector<std::string>{"A=1", "B"});
  CHECK(r.options.program == std::vector<std::string>{"prog", "-np", "3", "--profile"});
  CHECK(r.settings.command.front() == "ddprun");
  auto dashed = parseLaunch({"--grace=7", "--timeout", "30", "--", "-weird", "x"});
  CHECK(dashed.options.program == std::vector<std::string>{"-weird", "x"});
  CHECK(dashed.options.graceSeconds == 7);
  CHECK(dashed.settings.graceSeconds == 7);
  CHECK(dashed.settings.timeoutSeconds == 30);
  auto named =
      parseLaunch({"--master-port", "29511", "--instance", "gn7", "--no-gpu-binding", "--log-level", "warn", "p"});
  CHECK(named.masterPort == 29511);
  CHECK(named.instance == "gn7");
  CHECK_FALSE(named.options.gpuBinding);
  CHECK(named.options.logLevel == "warn");
  ddp::log::setLevel(spdlog::level::info);
}

TEST_CASE("cli: bad options before PROGRAM are errors naming them", "[launcher][cli]") {
  std::ostringstream out;
  CHECK_THROWS_WITH(parseCommandLine({"--np-per-node", "2", "p"}, out), Contains("unknown option '--np-per-node'"));
  CHECK_THROWS_WITH(parseCommandLine({"-np", "2"}, out), Contains("no program to run"));
  CHECK_THROWS_WITH(parseCommandLine({"--max-restarts", "-1", "p"}, out),
                    Contains("--max-restarts: Value -1 not in range"));
  CHECK_THROWS_WITH(parseCommandLine({"--log-level", "loud", "p"}, out), Contains("--log-level 'loud'"));
  CHECK_THROWS_AS(parseCommandLine({"--grace"}, out), ddp::ConfigError);
}

TEST_CASE("doctor: eRDMA devices, what turns them off, the interface and the MTU LL128 needs", "[launcher][doctor]") {
  // A sysfs tree as an eRDMA host has it (class/infiniband/erdma_0, class/net/eth0/mtu).
  const auto sys = fs::path(fs::temp_directory_path()) / fmt::format("ddp-sys-{}", ::getpid());
  fs::create_directories(sys / "class/infiniband/erdma_0");
  fs::create_directories(sys / "class/net/eth0");
  fs::create_directories(sys / "class/net/lo");
  auto mtu = [&](const char* value) { std::ofstream(sys / "class/net/eth0/mtu") << value << "\n"; };
  auto status = [&](const std::vector<ddp::launcher::Check>& checks, const std::string& name) {
    for (const auto& c : checks)
      if (c.name == name)
        return std::string(ddp::launcher::checkStatusName(c.status)) + ": " + c.detail + " | " + c.fix;
    return std::string("absent");
  };
  using Env = ddp::Environment;
  auto one = [](const std::string& name, const std::string& value) {
    return Env(std::map<std::string, std::string, std::less<>>{{name, value}});
  };
  mtu("1500");
  auto plain = ddp::launcher::erdmaChecks(sys.string(), Env{});
  CHECK_THAT(status(plain, "eRDMA: NCCL transport"), Catch::StartsWith("info: erdma_0; NCCL_IB_HCA=unset"));
  CHECK_THAT(status(plain, "eRDMA: NCCL_SOCKET_IFNAME"), Catch::Contains("NCCL_SOCKET_IFNAME=eth0"));
  CHECK_THAT(status(plain, "eRDMA: MTU eth0"), Catch::StartsWith("warn: 1500") && Catch::Contains("NCCL_PROTO=^LL128"));
  mtu("8500");
  auto good = ddp::launcher::erdmaChecks(sys.string(), Env(std::map<std::string, std::string, std::less<>>{
                                                           {"NCCL_IB_HCA", "erdma"}, {"NCCL_SOCKET_IFNAME", "eth0"}}));
  CHECK_THAT(status(good, "eRDMA: NCCL transport"), Catch::StartsWith("pass"));
  CHECK(status(good, "eRDMA: NCCL_SOCKET_IFNAME") == "absent");
  CHECK_THAT(status(good, "eRDMA: MTU eth0"), Catch::StartsWith("pass: 8500"));
  CHECK_THAT(status(ddp::launcher::erdmaChecks(sys.string(), one("NCCL_IB_DISABLE", "1")), "eRDMA: NCCL transport"),
             Catch::StartsWith("warn") && Catch::Contains("NCCL_IB_DISABLE=1"));
  CHECK_THAT(status(ddp::launcher::erdmaChecks(sys.string(), one("NCCL_IB_HCA", "mlx5")), "eRDMA: NCCL transport"),
             Catch::Contains("NCCL_IB_HCA=mlx5 leaves them out"));
  CHECK_THAT(status(ddp::launcher::erdmaChecks(sys.string(), one("NCCL_IB_HCA", "^mlx5")), "eRDMA: NCCL transport"),
             Catch::StartsWith("pass"));  // leaves out mlx5 only
  CHECK_THAT(status(ddp::launcher::erdmaChecks(sys.string(), one("NCCL_IB_HCA", "^erdma")), "eRDMA: NCCL transport"),
             Catch::Contains("leaves them out"));
  CHECK_THAT(status(ddp::launcher::erdmaChecks(sys.string(), one("NCCL_NET", "ib")), "eRDMA: NCCL transport"),
             Catch::StartsWith("info"));
  CHECK_THAT(
      status(ddp::launcher::erdmaChecks(sys.string(), one("NCCL_SOCKET_IFNAME", "ib")), "eRDMA: NCCL_SOCKET_IFNAME"),
      Catch::StartsWith("warn: ib selects no interface"));
  CHECK(ddp::launcher::erdmaChecks((sys / "none").string(), Env{}).empty());  // no eRDMA device: no checks
  fs::remove_all(sys);
}

TEST_CASE("cli: the doctor and worker subcommands, help and version", "[launcher][cli]") {
  std::ostringstream out;
  auto doctor = parseCommandLine({"doctor", "--json", "--no-allreduce", "--instance", "gn7"}, out);
  REQUIRE(std::holds_alternative<DoctorOptions>(doctor));
  CHECK(std::get<DoctorOptions>(doctor).json);
  CHECK_FALSE(std::get<DoctorOptions>(doctor).allreduce);
  CHECK(std::get<DoctorOptions>(doctor).instance == "gn7");
  auto bad = parseCommandLine({"doctor", "--bogus"}, out);
  REQUIRE(std::holds_alternative<PrintedCommand>(bad));
  CHECK(std::get<PrintedCommand>(bad).exitCode == 2);
  for (const auto& args : {std::vector<std::string>{"worker", "--", "prog", "-np", "1"},
                           std::vector<std::string>{"worker", "prog", "-np", "1"}}) {
    auto worker = parseCommandLine(args, out);
    REQUIRE(std::holds_alternative<WorkerCommand>(worker));
    CHECK(std::get<WorkerCommand>(worker).program == std::vector<std::string>{"prog", "-np", "1"});
  }
  auto version = parseCommandLine({"--version"}, out);
  REQUIRE(std::holds_alternative<PrintedCommand>(version));
  CHECK(out.str().rfind("ddprun ", 0) == 0);
  std::ostringstream help;
  auto shown = parseCommandLine({"--help"}, help);
  CHECK(std::get<PrintedCommand>(shown).exitCode == 0);
  CHECK(help.str().find("--max-restarts") != std::string::npos);
  CHECK(help.str().find("doctor") != std::string::npos);
}

TEST_CASE("ports: a free one is held; a held or used one is refused", "[launcher][port]") {
  PortReservation first;
  CHECK(first.port() > 0);
  CHECK_THROWS_WITH(PortReservation(first.port()), Contains("another ddprun run holds it"));
  int used = 0;
  const int fd = io::listenTcp("0.0.0.0", used);
  CHECK_THROWS_WITH(PortReservation(used),
                    Contains(fmt::format("--master-port {} is not free on this host (Address already in use)", used)));
  ::close(fd);
  PortReservation again(used);  // free again
  CHECK(again.port() == used);
  PortReservation moved(std::move(again));
  CHECK(moved.port() == used);
  CHECK_THROWS_AS(PortReservation(used), ddp::ConfigError);  // the lock moved with it
  const auto lockOf = [](int port) { return fs::path(fmt::format("/tmp/ddprun-port-{}.lock", port)); };
  CHECK(fs::exists(lockOf(used)));
  int firstPort = first.port();
  { PortReservation gone(std::move(first)); }
  CHECK_FALSE(fs::exists(lockOf(firstPort)));  // no lock file left behind
}

TEST_CASE("ports: MASTER_PORT is drawn below the kernel's ephemeral range", "[launcher][port]") {
  CHECK(masterPortBand("32768\t60999\n") == std::pair(22768, 32767));  // Linux's default
  CHECK(masterPortBand("10000 65535") == std::pair(1024, 9999));
  CHECK(masterPortBand("1024 65535") == std::pair(0, 0));  // nothing below it: the kernel picks
  CHECK(masterPortBand("") == std::pair(0, 0));
  CHECK(masterPortBand("60999 32768") == std::pair(0, 0));
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  const auto [first, last] = masterPortBand(std::string(std::istreambuf_iterator<char>(range), {}));
  REQUIRE(first > 0);  // this machine's range leaves room below it
  PortReservation r;
  CHECK(r.port() >= first);
  CHECK(r.port() <= last);
}

TEST_CASE("ports: no lock files left behind by reservations", "[launcher][port]") {
  int port = 0;
  {
    PortReservation r;
    port = r.port();
    CHECK(fs::exists(fmt::format("/tmp/ddprun-port-{}.lock", port)));
  }
  CHECK_FALSE(fs::exists(fmt::format("/tmp/ddprun-port-{}.lock", port)));
  int busy = 0;
  const int fd = io::listenTcp("0.0.0.0", busy);
  CHECK_THROWS(PortReservation(busy));
  ::close(fd);
  CHECK_FALSE(fs::exists(fmt::format("/tmp/ddprun-port-{}.lock", busy)));  // nor by a refusal
}

TEST_CASE("run directories: a default name gets a suffix, an explicit one with a run is refused",
          "[launcher][run_dir]") {
  const auto root = freshDir("ddp-rundir");
  const auto base = (root / "runs" / "20261201-000000-train").string();
  CHECK(createRunDirectory(base, false, false) == base);
  CHECK(createRunDirectory(base, false, true) == base + "-2");
  CHECK(fs::is_directory(base + "-2/nccl"));
  CHECK(fs::is_directory(base + "-2/util"));
  CHECK_FALSE(fs::exists(base + "/nccl"));
  const auto mine = (root / "mine").string();
  CHECK(createRunDirectory(mine, true, false) == mine);
  CHECK(createRunDirectory(mine, true, false) == mine);  // empty: reused
  std::ofstream(mine + "/run.json") << "{}";
  CHECK_THROWS_WITH(createRunDirectory(mine, true, false), Contains("already holds a run (run.json)"));
  CHECK_THROWS_WITH(createRunDirectory("/proc/ddprun-run", true, false),
                    Contains("run directory /proc/ddprun-run: cannot create"));
  fs::remove_all(root);
}

TEST_CASE("the worker: ddprun-worker when it sits beside ddprun and can run, else ddprun worker",
          "[launcher][worker]") {
  const auto dir = freshDir("ddp-workercmd");
  fs::create_directories(dir);
  const auto self = (dir / "ddprun").string();
  const auto lean = (dir / "ddprun-worker").string();
  CHECK(workerCommand(self) == std::vector<std::string>{self, "worker"});
  std::ofstream(lean) << "#!/bin/sh\n";
  CHECK(workerCommand(self) == std::vector<std::string>{self, "worker"});  // not executable
  fs::permissions(lean, fs::perms::owner_exec, fs::perm_options::add);
  CHECK(workerCommand(self) == std::vector<std::string>{lean});
  // The build's own: the two binaries side by side.
  CHECK(workerCommand(DDPRUN_BINARY).front() == fs::path(DDPRUN_BINARY).parent_path() / "ddprun-worker");
  fs::remove_all(dir);
}

TEST_CASE("host probes: when they run, what they run, and what they find with the real mpirun", "[launcher][verdict]") {
  LaunchPlan plan;
  plan.launcher = "mpirun";
  plan.argv = {"/usr/bin/mpirun", "-np", "4"};
  plan.mpiArgs = {"--mca", "btl", "self"};
  plan.hosts = {{"localhost", 1}, {"ddp-no-such-host.invalid", 1}};
  CHECK(hostProbeArgv(plan, "n2") ==
        std::vector<std::string>{"/usr/bin/mpirun", "-np", "1", "--host", "n2:1", "--mca", "btl", "self", "/bin/true"});
  VerdictInput in;
  in.np = 2;
  in.placement = {{"localhost", {0}}, {"ddp-no-such-host.invalid", {1}}};
  in.mpirun = ddp::ExitStatus{1, std::nullopt};
  CHECK(needsHostProbe(in, plan));
  auto other = in;  // a rank arrived: the verdict needs no probe
  other.known[0].host = "localhost";
  CHECK_FALSE(needsHostProbe(other, plan));
  other = in;  // mpirun ended well
  other.mpirun = ddp::ExitStatus{0, std::nullopt};
  CHECK_FALSE(needsHostProbe(other, plan));
  other = in;  // Ctrl-C
  other.interruptedBy = SIGINT;
  CHECK_FALSE(needsHostProbe(other, plan));
  other = in;  // one host: nothing to tell apart
  other.placement.pop_back();
  CHECK_FALSE(needsHostProbe(other, plan));
  auto srun = plan;
  srun.launcher = "srun";
  CHECK_FALSE(needsHostProbe(in, srun));
  // The real mpirun: it starts /bin/true here, and cannot reach a host that does not resolve.
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  plan.argv = {"mpirun"};
  plan.mpiArgs = {};
  const auto probed = probeHosts(plan, std::chrono::seconds(20));
  CHECK(probed.at("localhost").empty());
  CHECK_FALSE(probed.at("ddp-no-such-host.invalid").empty());
}

TEST_CASE("versions: probed once per installation, cached, probed again when mpirun changes", "[launcher][probe]") {
  const auto dir = freshDir("ddp-versions");
  fs::create_directories(dir);
  const auto mpirun = dir / "mpirun", calls = dir / "calls", cache = dir / "cache" / "ddprun" / "versions.json";
  auto install = [&](const std::string& version) {  // a new file: another inode, size or time
    fs::remove(mpirun);
    std::ofstream(mpirun) << "#!/bin/sh\necho x >>'" << calls.string() << "'\necho 'mpirun (Open MPI) " << version
                          << "'\n";
    fs::permissions(mpirun, fs::perms::owner_all);
  };
  auto probes = [&] {
    std::ifstream in(calls);
    return std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
  };
  const char* before = std::getenv("XDG_CACHE_HOME");
  const std::string saved = before ? before : "";
  ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  install("9.8.7");
  CHECK(probeVersions(mpirun.string()).openmpi == "9.8.7");
  CHECK(probes() == 1);
  CHECK(fs::exists(cache));
  CHECK(probeVersions(mpirun.string()).openmpi == "9.8.7");
  CHECK(probes() == 1);  // from the cache
  install("9.8.10");
  CHECK(probeVersions(mpirun.string()).openmpi == "9.8.10");
  CHECK(probes() == 2);
  std::ofstream(cache) << "{not json";  // a damaged cache is probed over and rewritten
  CHECK(probeVersions(mpirun.string()).openmpi == "9.8.10");
  CHECK(probeVersions(mpirun.string()).openmpi == "9.8.10");
  CHECK(probes() == 3);
  std::ofstream(cache) << R"({"entries": [{"key": 3}, 7, {"versions": []}]})";  // entries ddprun did not write
  CHECK(probeVersions(mpirun.string()).openmpi == "9.8.10");
  CHECK(probes() == 4);
  fs::remove_all(dir / "cache");
  std::ofstream(dir / "cache") << "a file where the directory goes";  // cannot be written: only slower
  CHECK(probeVersions(mpirun.string()).openmpi == "9.8.10");
  CHECK(probes() == 5);
  if (before)
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_CACHE_HOME");
  fs::remove_all(dir);
}

TEST_CASE("restarts: failed attempts are kept and recorded until one succeeds", "[launcher][restart]") {
  const auto dir = freshDir("ddp-restarts");
  const ddp::RunLayout layout(dir.string());
  layout.makeRankDirectories(true);
  JobSettings settings;
  settings.maxRestarts = 3;
  settings.profile = true;
  std::vector<int> attempts;
  const int code = runWithRestarts(layout, settings, [&](int attempt) {
    attempts.push_back(attempt);
    CHECK(settings.attempt == attempt);
    std::ofstream(layout.utilisation(0)) << "attempt " << attempt << "\n";
    return attempt < 2 ? JobOutcome{7, false, "rank 0 failed: exit code 7"} : JobOutcome{0, false, "succeeded"};
  });
  CHECK(code == 0);
  CHECK(attempts == std::vector<int>{0, 1, 2});
  REQUIRE(settings.earlierAttempts.size() == 2);
  CHECK(settings.earlierAttempts[1].attempt == 1);
  CHECK(settings.earlierAttempts[1].exitCode == 7);
  CHECK(settings.earlierAttempts[1].files == "attempts/1");
  CHECK(settings.earlierAttempts[1].reason == "rank 0 failed: exit code 7");
  CHECK(fs::exists(layout.attempt(0).utilisation(0)));
  CHECK(fs::exists(layout.attempt(1).utilisation(0)));
  CHECK(layout.attempts() == std::vector<int>{0, 1});

  JobSettings once;
  once.maxRestarts = 1;
  int calls = 0;
  CHECK(runWithRestarts(layout.attempt(9), once, [&](int) {
          return ++calls, JobOutcome{130, true, "interrupted"};
        }) == 130);
  CHECK(calls == 1);  // interrupted: no restart
  CHECK(runWithRestarts(layout.attempt(9), once, [&](int) { return ++calls, JobOutcome{5, false, "x"}; }) == 5);
  CHECK(calls == 3);  // one restart, then the budget is used up
  fs::remove_all(dir);
}

TEST_CASE("restarts: after a lost host, on the hosts left only when --min-np allows", "[launcher][restart]") {
  const auto dir = freshDir("ddp-restarts-host");
  const ddp::RunLayout layout(dir.string());
  layout.makeRankDirectories(false);
  JobOutcome lost;
  lost.exitCode = 1;
  lost.summary = "host b lost";
  lost.np = 6;
  lost.lostHost = "b";
  lost.ranksLeft = 4;
  JobSettings settings;
  settings.maxRestarts = 2;
  settings.minNp = 4;
  std::vector<int> nps;
  CHECK(runWithRestarts(layout, settings, [&](int attempt) {
          nps.push_back(settings.np);
          if (attempt == 0) return lost;
          JobOutcome ok;
          ok.np = settings.np;
          return ok;
        }) == 0);
  CHECK(nps == std::vector<int>{0, 4});  // attempt 1 ran 4 ranks without host b
  CHECK(settings.lostHosts == std::vector<std::string>{"b"});
  REQUIRE(settings.earlierAttempts.size() == 1);
  CHECK(settings.earlierAttempts[0].np == 6);
  CHECK(settings.earlierAttempts[0].lostHost == "b");

  for (int minNp : {0, 5}) {  // not allowed, or too few ranks left: no restart
    JobSettings strict;
    strict.maxRestarts = 2;
    strict.minNp = minNp;
    int calls = 0;
    CHECK(runWithRestarts(layout.attempt(9), strict, [&](int) { return ++calls, lost; }) == 1);
    CHECK(calls == 1);
    CHECK(strict.lostHosts.empty());
  }
  fs::remove_all(dir);
}

TEST_CASE("verdict: culprit, collateral, lost, and the exit code", "[launcher][verdict]") {
  VerdictInput in;
  in.np = 4;
  in.reported = {{0, endedAt(0, std::nullopt, SIGTERM, 900, true)},
                 {1, endedAt(1, 0, std::nullopt, 100, false)},
                 {2, endedAt(2, std::nullopt, SIGSEGV, 500, false)}};
  ddp::RankExitRecord said;
  said.host = "node-b";
  said.programPid = 77;
  in.known[3] = said;
  auto v = judgeRanks(in);
  CHECK(v.culprit == 2);
  CHECK(v.records.at(2).status == RankStatus::kCulprit);
  CHECK(v.records.at(0).status == RankStatus::kCollateral);
  CHECK(v.records.at(1).status == RankStatus::kOk);
  CHECK(v.records.at(3).status == RankStatus::kLost);
  CHECK(v.records.at(3).host == "node-b");
  CHECK(lostLines(v, "vm", "mpirun", "mpirun: exit code 1") ==
        std::vector<std::string>{
            "rank(s) 3 left no exit record: never started, or the worker was killed (mpirun: exit code 1)"});
  CHECK(v.collateral == std::vector<int>{0});
  CHECK(v.lost == std::vector<int>{3});
  CHECK(v.status == RunStatus::kFailed);
  CHECK(v.exitCode == 128 + SIGSEGV);

  // A second rank that fails by itself after the culprit keeps its own failure and code: it
  // was not stopped by ddprun.
  auto two = in;
  two.reported[1] = endedAt(1, 3, std::nullopt, 700, false);
  v = judgeRanks(two);
  CHECK(v.culprit == 2);
  CHECK(v.records.at(1).status == RankStatus::kFailed);
  CHECK(v.records.at(1).exitCode == 3);
  CHECK(v.alsoFailed == std::vector<int>{1});
  CHECK(v.collateral == std::vector<int>{0});
  // Asked to stop, but it ended with an error code of its own: it was failing already.
  two.reported[1] = endedAt(1, 3, std::nullopt, 700, true);
  CHECK(judgeRanks(two).records.at(1).status == RankStatus::kFailed);
  two.reported[1] = endedAt(1, 143, std::nullopt, 700, true);  // a shell's "killed by SIGTERM"
  CHECK(judgeRanks(two).records.at(1).status == RankStatus::kCollateral);

  in.interruptedBy = SIGINT;  // Ctrl-C: ranks stopped, not collateral, when nobody failed first
  in.reported.erase(2);
  in.reported.erase(1);
  v = judgeRanks(in);
  CHECK_FALSE(v.culprit);
  CHECK(v.records.at(0).status == RankStatus::kStopped);
  CHECK(v.exitCode == 130);
  CHECK(v.status == RunStatus::kInterrupted);

  VerdictInput hang;
  hang.np = 2;
  hang.hung = {1};
  hang.reported = {{0, endedAt(0, std::nullopt, SIGTERM, 9, true)}, {1, endedAt(1, std::nullopt, SIGKILL, 9, true)}};
  v = judgeRanks(hang);
  CHECK(v.culprit == 1);
  CHECK(v.records.at(1).status == RankStatus::kHung);
  CHECK(v.records.at(0).status == RankStatus::kCollateral);
  CHECK(v.exitCode == 124);

  VerdictInput fine;
  fine.np = 1;
  fine.reported = {{0, endedAt(0, 0, std::nullopt, 5, false)}};
  fine.mpirun = ddp::ExitStatus{3, std::nullopt, 0};
  v = judgeRanks(fine);
  CHECK(v.exitCode == 3);  // mpirun itself failed
  fine.mpirun = ddp::ExitStatus{0, std::nullopt, 0};
  CHECK(judgeRanks(fine).exitCode == 0);
}

TEST_CASE("verdict: a host whose ranks all dropped at once, first, is the culprit", "[launcher][verdict]") {
  // Ranks 2 and 3 on node-b went silent together at t=500; rank 0 was then stopped, rank 1 failed
  // when its collective broke (SIGABRT at 600): collateral, not a culprit of its own.
  VerdictInput in;
  in.np = 4;
  auto a0 = endedAt(0, std::nullopt, SIGTERM, 900, true), a1 = endedAt(1, std::nullopt, SIGABRT, 600, false);
  a0.host = a1.host = "node-a";
  in.reported = {{0, a0}, {1, a1}};
  for (int r : {2, 3}) {
    ddp::RankExitRecord said;
    said.host = "node-b";
    in.known[r] = said;
    in.dropped[r] = 500 + r;
  }
  auto v = judgeRanks(in);
  REQUIRE(v.lostHost);
  CHECK(*v.lostHost == "node-b");
  CHECK(v.lostHostRanks == std::vector<int>{2, 3});
  CHECK_FALSE(v.culprit);
  CHECK(v.collateral == std::vector<int>{0, 1});
  CHECK(v.records.at(2).status == RankStatus::kLost);
  CHECK(v.exitCode == 1);
  CHECK(v.status == RunStatus::kFailed);

  // A rank that failed on its own before the host went quiet stays the culprit.
  auto earlier = in;
  earlier.reported[1] = endedAt(1, 3, std::nullopt, 400, false);
  earlier.reported[1].host = "node-a";
  v = judgeRanks(earlier);
  CHECK_FALSE(v.lostHost);
  CHECK(v.culprit == 1);
  CHECK(v.exitCode == 3);
  // A rank elsewhere whose worker went quiet after the host did (mpirun killed it, record unsent) is
  // collateral too; one that went quiet before it stays lost.
  auto killed = in;
  killed.reported.erase(0);
  killed.known[0].host = "node-a";
  killed.dropped[0] = 700;
  v = judgeRanks(killed);
  REQUIRE(v.lostHost);
  CHECK(v.collateral == std::vector<int>{0, 1});
  CHECK(v.lost == std::vector<int>{2, 3});
  killed.dropped[0] = 400;
  v = judgeRanks(killed);
  CHECK(v.collateral == std::vector<int>{1});
  CHECK(v.lost == std::vector<int>{0, 2, 3});
  // A host none of whose ranks arrived, while node-a's did (srun then ended the step there): it
  // never came up, and node-a's ranks are collateral; with no rank arrived at all, no host is named.
  VerdictInput never;
  never.np = 4;
  never.placement = {{"node-a", {0, 1}}, {"node-b", {2, 3}}};
  for (int r : {0, 1}) {
    never.known[r].host = "node-a";
    never.dropped[r] = 100 + r;
  }
  v = judgeRanks(never);
  REQUIRE(v.lostHost);
  CHECK(*v.lostHost == "node-b");
  CHECK(v.hostNeverUp);
  CHECK(v.lostHostRanks == std::vector<int>{2, 3});
  CHECK(v.records.at(3).host == "node-b");
  CHECK(lostLines(v, "vm", "srun", "srun: exit code 1") ==
        std::vector<std::string>{"host node-b never came up: none of its ranks (2, 3) reached ddprun (the host is "
                                 "down or unreachable, or srun could not start them there)",
                                 "rank(s) 0, 1 were stopped because of it (collateral, not at fault)"});
  CHECK(v.collateral == std::vector<int>{0, 1});
  CHECK(v.exitCode == 1);
  never.known.clear();
  never.dropped.clear();
  CHECK_FALSE(judgeRanks(never).lostHost);
  // No rank arrived and mpirun failed: the host probes (host_probe.hpp) name the host mpirun cannot
  // start a process on alone while it can on another; none when it can on none, or on all.
  never.mpirun = ddp::ExitStatus{1, std::nullopt};
  never.probed = {{"node-a", ""}, {"node-b", "exit code 1"}};
  v = judgeRanks(never);
  REQUIRE(v.lostHost);
  CHECK(*v.lostHost == "node-b");
  CHECK(v.neverUpProbe == "exit code 1");
  CHECK(v.lost == std::vector<int>{0, 1, 2, 3});  // lostLines names 2, 3 with their host
  CHECK(v.exitCode == 1);
  CHECK(lostLines(v, "vm", "mpirun", "mpirun: exit code 1") ==
        std::vector<std::string>{
            "host node-b never came up: none of its ranks (2, 3) reached ddprun, and mpirun could not start a "
            "process there alone (`mpirun -np 1 --host node-b:1 /bin/true`: exit code 1) while it could on the other "
            "hosts (the host is down or unreachable, or cannot connect back to vm)",
            "rank(s) 0, 1 left no exit record: never started, or the worker was killed (mpirun: exit code 1)"});
  never.probed["node-a"] = "nothing started within 20 s";
  CHECK_FALSE(judgeRanks(never).lostHost);
  never.probed = {{"node-a", ""}, {"node-b", ""}};
  CHECK_FALSE(judgeRanks(never).lostHost);
  // One rank of a host lost is not the host lost.
  auto one = in;
  one.dropped.erase(3);
  CHECK_FALSE(judgeRanks(one).lostHost);
  // Ctrl-C is Ctrl-C.
  auto interrupted = in;
  interrupted.interruptedBy = SIGINT;
  CHECK_FALSE(judgeRanks(interrupted).lostHost);
}
