// The per-rank worker as a real process (`ddprun worker -- PROGRAM`) against a control server
// played by the test: the rendezvous, a terminate that comes before start, an ordinary run,
// ddprun disappearing, the hand-over to `ddprun worker` when ddprun's host is a name, and the
// program's status when the watch loop ends early.
#include "../../launcher/src/io.hpp"
#include "../../launcher/src/probe.hpp"
#include "ddp/common/rank_exit.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/launcher/control.hpp"
#include "ddp/launcher/launch.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/launcher/worker.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>

using namespace ddp::launcher;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// ddprun's side of one worker: a listener, the accepted connection, whole lines.
class FakeLauncher {
 public:
  FakeLauncher() : listener_(io::listenTcp("127.0.0.1", port_)) {}
  ~FakeLauncher() {
    if (fd_ >= 0) ::close(fd_);
    ::close(listener_);
  }
  int port() const { return port_; }
  // The next line from the worker, waiting up to `seconds`; nullopt when none came.
  std::optional<std::string> line(double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      if (fd_ >= 0)
        if (auto l = in_.next()) return l;
      pollfd p{fd_ >= 0 ? fd_ : listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      if (fd_ < 0) {
        fd_ = ::accept(listener_, nullptr, nullptr);
        continue;
      }
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return std::nullopt;
      in_.append(buf, static_cast<size_t>(n));
    }
    return std::nullopt;
  }
  void send(const std::string& text) { REQUIRE(io::writeAll(fd_, text)); }
  void hangUp() {
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int port_ = 0;
  int listener_;
  int fd_ = -1;
  io::LineBuffer in_;
};

struct WorkerRun {
  fs::path dir;
  Process process;
};

WorkerRun startWorker(const FakeLauncher& launcher, const std::vector<std::string>& program, const std::string& name,
                      const std::string& host = "127.0.0.1") {
  WorkerRun w;
  w.dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(w.dir);
  SpawnOptions spawn;
  spawn.argv = workerCommand(DDPRUN_BINARY);  // the worker ddprun runs: ddprun-worker, built beside it
  spawn.argv.push_back("--");
  spawn.argv.insert(spawn.argv.end(), program.begin(), program.end());
  spawn.setEnv = {{"OMPI_COMM_WORLD_RANK", "0"},
                  {"OMPI_COMM_WORLD_SIZE", "1"},
                  {"DDPRUN_CONTROL", host + ":" + std::to_string(launcher.port())},
                  {"DDPRUN_CONTROL_TOKEN", "tok"},
                  {"DDPRUN_RUN_DIR", w.dir.string()},
                  {"DDPRUN_OUTPUT", "quiet"},
                  {"DDPRUN_GRACE_S", "1"}};
  spawn.newProcessGroup = true;
  w.process = Process::spawn(spawn);
  return w;
}

// The worker's exit status, waiting up to `seconds` (then killed: the test fails).
std::optional<ddp::ExitStatus> waitFor(Process& p, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    if (auto s = p.poll()) return s;
    ::usleep(20000);
  }
  p.signalGroup(SIGKILL);
  p.wait();
  return std::nullopt;
}

ddp::RankExitRecord exitMessage(const std::string& line) {
  auto message = control::parseWorkerMessage(line);
  REQUIRE(message);
  REQUIRE(std::holds_alternative<control::Exit>(*message));
  return std::get<control::Exit>(*message).record;
}

}  // namespace

TEST_CASE("worker: a terminate before start ends it at once, without starting the program", "[launcher][worker]") {
  FakeLauncher launcher;
  auto w = startWorker(launcher, {"/bin/sleep", "30"}, "ddp-worker-early");
  const auto hello = launcher.line(10);
  REQUIRE(hello);
  CHECK(hello->rfind("hello tok 0 ", 0) == 0);
  launcher.send("terminate\n");
  const auto exit = launcher.line(5);  // before the fix it waited for a start (up to 600 s)
  REQUIRE(exit);
  const auto record = exitMessage(*exit);
  CHECK_FALSE(record.started);
  CHECK(record.stopRequested);
  const auto status = waitFor(w.process, 5);
  REQUIRE(status);
  CHECK(status->code == 0);
  const ddp::RunLayout layout(w.dir.string());
  CHECK(fs::exists(layout.rankExit(0)));
  CHECK_FALSE(fs::exists(layout.rankLog(0)));
  fs::remove_all(w.dir);
}

TEST_CASE("worker: a terminate that arrives with the start wins", "[launcher][worker]") {
  FakeLauncher launcher;
  auto w = startWorker(launcher, {"/bin/sleep", "30"}, "ddp-worker-both");
  REQUIRE(launcher.line(10));
  launcher.send("start 0 1\nterminate\n");
  const auto exit = launcher.line(5);
  REQUIRE(exit);
  CHECK_FALSE(exitMessage(*exit).started);
  REQUIRE(waitFor(w.process, 5));
  fs::remove_all(w.dir);
}

TEST_CASE("worker: a run reports started, the exit record, and logs the output", "[launcher][worker]") {
  FakeLauncher launcher;
  auto w = startWorker(launcher, {"sh", "-c", "echo out; echo err >&2; echo $RANK $WORLD_SIZE $NODE_RANK; exit 3"},
                       "ddp-worker-run");
  REQUIRE(launcher.line(10));
  launcher.send("start 0 1\n");
  const auto started = launcher.line(10);
  REQUIRE(started);
  CHECK(started->rfind("started ", 0) == 0);
  std::optional<std::string> last;
  while (auto l = launcher.line(10)) last = l;  // beats may come first; the exit record is last
  REQUIRE(last);
  const auto record = exitMessage(*last);
  CHECK(record.started);
  CHECK(record.exitCode == 3);
  CHECK_FALSE(record.stopRequested);
  const auto status = waitFor(w.process, 5);
  REQUIRE(status);
  CHECK(status->code == 0);  // ddprun has the record
  const ddp::RunLayout layout(w.dir.string());
  std::ifstream log(layout.rankLog(0));
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("out\n") != std::string::npos);
  CHECK(text.find("err\n") != std::string::npos);
  CHECK(text.find("0 1 0\n") != std::string::npos);
  std::ifstream file(layout.rankExit(0));
  CHECK(ddp::rankExitFromJson(nlohmann::json::parse(file)).exitCode == 3);
  fs::remove_all(w.dir);
}

TEST_CASE("worker: when ddprun goes away the program is stopped", "[launcher][worker]") {
  FakeLauncher launcher;
  auto w = startWorker(launcher, {"/bin/sleep", "30"}, "ddp-worker-orphan");
  REQUIRE(launcher.line(10));
  launcher.send("start 0 1\n");
  REQUIRE(launcher.line(10));  // started
  launcher.hangUp();
  const auto status = waitFor(w.process, 10);
  REQUIRE(status);
  CHECK(status->code == 128 + SIGTERM);  // nobody has the record: the program's own status
  std::ifstream file(ddp::RunLayout(w.dir.string()).rankExit(0));
  const auto record = ddp::rankExitFromJson(nlohmann::json::parse(file));
  CHECK(record.stopRequested);
  CHECK(record.signal == SIGTERM);
  fs::remove_all(w.dir);
}

TEST_CASE("worker: ddprun's host given by name: ddprun-worker hands the rank to `ddprun worker`",
          "[launcher][worker]") {
  FakeLauncher launcher;
  auto w = startWorker(launcher, {"sh", "-c", "exit 5"}, "ddp-worker-name", "localhost");
  REQUIRE(launcher.line(10));  // hello: localhost was resolved
  std::error_code ec;
  // The same process (exec keeps the pid), now ddprun's binary, which has the name service.
  CHECK(fs::read_symlink(fmt::format("/proc/{}/exe", w.process.pid()), ec).filename() == "ddprun");
  launcher.send("start 0 1\n");
  std::optional<std::string> last;
  while (auto l = launcher.line(10)) last = l;
  REQUIRE(last);
  CHECK(exitMessage(*last).exitCode == 5);
  REQUIRE(waitFor(w.process, 5));
  fs::remove_all(w.dir);
}

TEST_CASE("worker: what only the dynamic loader gives, named before the rank starts", "[launcher][worker]") {
  const WorkerLibraries none;
  const WorkerLibraries all{&probe::openGpu, &io::resolveIpv4};
  CHECK(missingLibrary(std::nullopt, false, none).empty());  // started by hand, nothing to sample
  CHECK(missingLibrary(std::string("127.0.0.1:4000"), false, none).empty());
  CHECK(missingLibrary(std::string("node7:4000"), false, none) ==
        "ddprun's host node7 (DDPRUN_CONTROL) is a name to resolve");
  CHECK(missingLibrary(std::string("127.0.0.1:4000"), true, none) == "its GPU is to be sampled through NVML");
  CHECK(missingLibrary(std::string("node7:4000"), true, all).empty());
}

TEST_CASE("settling a program the watch lost: killed and reaped, its status known", "[launcher][worker]") {
  SpawnOptions spawn;
  spawn.argv = {"/bin/sleep", "30"};
  spawn.newProcessGroup = true;
  auto child = Process::spawn(spawn);
  const auto begin = Clock::now();
  const auto status = settleProgram(child, std::nullopt);  // what a poll error leaves
  CHECK(status.signal == SIGKILL);
  CHECK(Clock::now() - begin < std::chrono::seconds(5));
  CHECK_FALSE(child.running());
  // A program that ended is reported as it ended.
  auto done = Process::spawn({{"sh", "-c", "exit 4"}, {}, {}, true});
  const auto ended = done.wait();
  CHECK(settleProgram(done, ended).code == 4);
}
