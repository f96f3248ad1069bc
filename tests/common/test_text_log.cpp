// The text helpers and the logger: one line per message, "NAME[ PREFIX]: [warning: ]message".
#include "ddp/common/error.hpp"
#include "ddp/common/json_fields.hpp"
#include "ddp/common/log.hpp"
#include "ddp/common/text.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace ddp;
using Catch::Contains;

namespace {

// What the code run by `body` writes to stderr.
template <typename Body>
std::string captureStderr(Body body) {
  char path[] = "/tmp/ddp-log-XXXXXX";
  const int fd = ::mkstemp(path);
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  body();
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  return text.str();
}

}  // namespace

TEST_CASE("rank lists fold runs of three or more", "[common][text]") {
  CHECK(rankList({}) == "");
  CHECK(rankList({3}) == "3");
  CHECK(rankList({0, 1}) == "0, 1");
  CHECK(rankList({0, 1, 2, 3, 5, 7, 8}) == "0-3, 5, 7, 8");
  CHECK(percent(0.256) == "25.6 %");
  CHECK(percent(0.256, 0) == "26 %");
}

TEST_CASE("the logger writes one line per message with its part's name and level", "[common][log]") {
  log::setLevel(spdlog::level::info);
  const auto text = captureStderr([] {
    log::get("ddprof")->info("read {} files", 3);
    log::get("ddprof")->warn("a cut line");
    log::get("ddprof")->error("cannot read x");
    log::get("ddprof")->debug("hidden at info");
  });
  CHECK(text == "ddprof: read 3 files\nddprof: warning: a cut line\nddprof: cannot read x\n");
  log::setPrefix("[host:3]");
  log::setLevel(spdlog::level::debug);
  int cleared = 0;
  log::setBeforeWrite([&] { ++cleared; });
  const auto worker = captureStderr([] { log::get("ddprun")->debug("shown"); });
  log::setBeforeWrite(nullptr);
  log::setPrefix("");
  log::setLevel(spdlog::level::info);
  CHECK(worker == "ddprun [host:3]: debug: shown\n");
  CHECK(cleared == 1);
  CHECK(log::parseLevel("warn", "--log-level") == spdlog::level::warn);
  CHECK_THROWS_WITH(log::parseLevel("loud", "--log-level"),
                    Contains("--log-level 'loud': expected error, warn, info or debug"));
}

TEST_CASE("JSON fields: typed reads that name the field", "[common][json]") {
  const auto j = nlohmann::json::parse(R"({"n": 3, "big": 18446744073709551615, "d": 1.5, "s": "x", "b": true,
                                           "none": null, "list": ["a", "b"], "map": {"k": "v"}})");
  const JsonFields f(j);
  CHECK(f.integer("n", 0) == 3);
  CHECK_THROWS_WITH(f.integer("big"), Contains("\"big\" is out of range"));
  CHECK_THROWS_WITH(f.integer("d"), Contains("\"d\" must be an integer"));
  CHECK(f.duration("d") == 1.5);
  CHECK(f.string("s") == "x");
  CHECK(f.boolean("b", false));
  CHECK(f.boolean("absent", true));
  CHECK_FALSE(f.has("none"));
  CHECK_FALSE(f.optionalInteger("none"));
  CHECK(f.strings("list") == std::vector<std::string>{"a", "b"});
  CHECK(f.stringMap("map").at("k") == "v");
  CHECK_THROWS_WITH(f.integer("missing"), Contains("missing field \"missing\""));
  CHECK_THROWS_WITH(JsonFields(nlohmann::json(1)), Contains("not a JSON object"));
}
