// The launcher↔worker control protocol (launcher/include/ddp/launcher/control.hpp): one format
// and one parser per message, round trips and malformed lines.
#include "ddp/launcher/control.hpp"

#include <catch2/catch.hpp>

using namespace ddp::launcher::control;
using ddp::Phase;

namespace {

template <typename T>
T workerRoundTrip(const WorkerMessage& message) {
  const auto line = format(message);
  CHECK(line.find('\n') == std::string::npos);
  const auto back = parseWorkerMessage(line);
  REQUIRE(back);
  REQUIRE(std::holds_alternative<T>(*back));
  return std::get<T>(*back);
}

template <typename T>
T launcherRoundTrip(const LauncherMessage& message) {
  const auto back = parseLauncherMessage(format(message));
  REQUIRE(back);
  REQUIRE(std::holds_alternative<T>(*back));
  return std::get<T>(*back);
}

}  // namespace

TEST_CASE("worker messages round-trip", "[launcher][control]") {
  CHECK(format(Hello{"t0k", 3, 4242, "node-1"}) == "hello t0k 3 4242 node-1");
  const auto hello = workerRoundTrip<Hello>(Hello{"t0k", 3, 4242, "node-1"});
  CHECK(hello.token == "t0k");
  CHECK(hello.rank == 3);
  CHECK(hello.pid == 4242);
  CHECK(hello.host == "node-1");
  CHECK(format(Started{99}) == "started 99");
  CHECK(workerRoundTrip<Started>(Started{99}).pid == 99);
  CHECK(format(Beat{{12, Phase::kBackward}}) == "beat 12 backward");
  const auto beat = workerRoundTrip<Beat>(Beat{{12, Phase::kBackward}});
  CHECK(beat.progress.step == 12);
  CHECK(beat.progress.phase == Phase::kBackward);
  CHECK(workerRoundTrip<Beat>(Beat{{5, std::nullopt}}).progress.done());
  CHECK(format(StacksDone{}) == "stacks-done");
  workerRoundTrip<StacksDone>(StacksDone{});
  CHECK(format(Alive{}) == "alive");
  workerRoundTrip<Alive>(Alive{});
  ddp::RankExitRecord record;
  record.rank = 2;
  record.host = "node-1";
  record.exitCode = 7;
  record.endUnixUs = 12345;
  const auto exit = workerRoundTrip<Exit>(Exit{record});
  CHECK(exit.record.rank == 2);
  CHECK(exit.record.exitCode == 7);
  CHECK(exit.record.endUnixUs == 12345);
  CHECK(format(Exit{record}).rfind("exit {", 0) == 0);
}

TEST_CASE("launcher messages round-trip", "[launcher][control]") {
  CHECK(format(Start{1, 2}) == "start 1 2");
  const auto start = launcherRoundTrip<Start>(Start{1, 2});
  CHECK(start.nodeRank == 1);
  CHECK(start.nodes == 2);
  CHECK(format(Terminate{}) == "terminate");
  launcherRoundTrip<Terminate>(Terminate{});
  CHECK(format(Stacks{}) == "stacks");
  launcherRoundTrip<Stacks>(Stacks{});
  CHECK(format(Ping{}) == "ping");
  launcherRoundTrip<Ping>(Ping{});
}

TEST_CASE("malformed or misdirected lines are not messages", "[launcher][control]") {
  for (const char* line : {"",
                           "hello",
                           "hello t0k",
                           "hello t -1 5 h",
                           "hello t 1 0 h",
                           "hello t 1 5 h extra",
                           "hello  t 1 5 h",
                           "started",
                           "started x",
                           "started 0",
                           "beat",
                           "beat 3",
                           "beat 3 lunch",
                           "beat x data",
                           "beat 3 data ",
                           "exit",
                           "exit {",
                           "exit []",
                           "exit {\"host\":\"h\"}",
                           "stacks-done now",
                           "alive now",
                           "ping",
                           "terminate",
                           "start 0 1",
                           "stacks"})
    CHECK_FALSE(parseWorkerMessage(line));
  for (const char* line :
       {"", "start", "start 0", "start 1 1", "start -1 2", "start 0 0", "start 0 2 x", "terminate now", "TERMINATE",
        "stacks-done", "hello t 1 5 h", "beat 1 data", "alive", "ping now"})
    CHECK_FALSE(parseLauncherMessage(line));
}
