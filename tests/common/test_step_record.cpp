// The step record (timings/rank-NNNNN.jsonl) and the progress line beside it.
#include "ddp/common/error.hpp"
#include "ddp/common/step_record.hpp"

#include <catch2/catch.hpp>

using namespace ddp;

TEST_CASE("a step record survives formatting and parsing", "[common][step_record]") {
  StepRecord r;
  r.rank = 3;
  r.worldSize = 8;
  r.step = 41;
  r.startUnixUs = 1764450000123456;
  r.samples = 64;
  r.stepMs = 12.5;
  r.phasesMs[Phase::kData] = 0.5;
  r.phasesMs[Phase::kCommWait] = 1.25;
  r.collectives.push_back({CollectiveOp::kAllreduce, 2, 1 << 20, r.startUnixUs + 9000, 0.75});
  r.collectives.push_back({CollectiveOp::kBroadcast, -1, 64, r.startUnixUs + 10, 0.01});
  r.loss = 2.25;
  CHECK(parseStepRecord(formatStepRecord(r)).cpuMs == std::nullopt);  // optional: left out when not measured
  r.cpuMs.emplace().fill(0);
  (*r.cpuMs)[Phase::kBackward] = 4.5;
  auto line = formatStepRecord(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("\"comm_wait\":1.25") != std::string::npos);
  auto back = parseStepRecord(line);
  CHECK(back.rank == 3);
  CHECK(back.worldSize == 8);
  CHECK(back.step == 41);
  CHECK(back.startUnixUs == r.startUnixUs);
  CHECK(back.samples == 64);
  CHECK(back.stepMs == 12.5);
  CHECK(back.phasesMs == r.phasesMs);
  CHECK(back.cpuMs == r.cpuMs);
  REQUIRE(back.collectives.size() == 2);
  CHECK(back.collectives[0].op == CollectiveOp::kAllreduce);
  CHECK(back.collectives[0].bucket == 2);
  CHECK(back.collectives[0].bytes == (1u << 20));
  CHECK(back.collectives[1].bucket == -1);
  CHECK(back.loss == 2.25);
}

TEST_CASE("a record from another writer: missing phases are zero, extra keys ignored", "[common][step_record]") {
  auto r = parseStepRecord(R"({"schema":1,"rank":0,"step":0,"start_unix_us":5,"samples":8,)"
                           R"("step_ms":3,"phases_ms":{"forward":1},"host":"a"})");
  CHECK(r.phasesMs[Phase::kForward] == 1);
  CHECK(r.phasesMs[Phase::kBackward] == 0);
  CHECK(r.collectives.empty());
  CHECK_FALSE(r.loss);
}

TEST_CASE("malformed records say which field is wrong", "[common][step_record]") {
  const std::string ok = R"("rank":0,"step":1,"start_unix_us":5,"samples":8,"step_ms":3,"phases_ms":{})";
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1," + ok.substr(0, ok.size() - 15) + "}"),
                    Catch::Contains("missing field \"phases_ms\""));
  CHECK_THROWS_WITH(parseStepRecord(R"({"schema":2,)" + ok + "}"), Catch::Contains("schema version 2"));
  CHECK_THROWS_WITH(parseStepRecord(R"({"schema":1,"rank":"0",)" + ok.substr(9) + "}"),
                    Catch::Contains("field \"rank\" must be an integer"));
  CHECK_THROWS_WITH(parseStepRecord(R"({"schema":1,"rank":-1,)" + ok.substr(9) + "}"),
                    Catch::Contains("\"rank\" is -1"));
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1," + ok.substr(0, ok.size() - 2) + "{\"data\":-1}}"),
                    Catch::Contains("\"data\" must be a duration"));
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1," + ok +
                                    R"(,"collectives":[{"op":"gather","bytes":1,"start_unix_us":1,"duration_ms":1}]})"),
                    Catch::Contains("unknown collective op \"gather\""));
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1,"), Catch::Contains("not JSON"));
  CHECK_THROWS_AS(parseStepRecord("[1]"), ddp::ConfigError);
  // Found by fuzz_timings: a number JSON cannot hold is a bad line, not an escaping exception.
  CHECK_THROWS_WITH(parseStepRecord("{\"schema\":1," + ok + ",\"x\":1e999}"),
                    Catch::Contains("not JSON") && Catch::Contains("number overflow"));
}

TEST_CASE("the progress line: STEP PHASE or STEP done, padding ignored", "[common][step_record]") {
  CHECK(formatStepProgress({12, Phase::kCommWait}) == "12 comm_wait");
  CHECK(formatStepProgress({3, std::nullopt}) == "3 done");
  for (Phase p : kPhases) {
    const auto back = parseStepProgress(formatStepProgress({7, p}) + "          \n");
    REQUIRE(back);
    CHECK(back->step == 7);
    CHECK(back->phase == p);
  }
  const auto done = parseStepProgress("41 done");
  REQUIRE(done);
  CHECK(done->done());
  CHECK(done->step == 41);
  for (const char* bad : {"", "   ", "done", "7", "7 lunch", "-1 data", "x data", " 7 data", "7  data"})
    CHECK_FALSE(parseStepProgress(bad));
}
