#include "ddp/comm/bench/collectives.hpp"
#include "ddp/comm/bench/engine.hpp"
#include "ddp/comm/bench/report.hpp"
#include "ddp/common/error.hpp"

#include <catch2/catch.hpp>

using namespace ddp::comm;
using namespace ddp::comm::bench;

TEST_CASE("bus-bandwidth factors follow nccl-tests' PERFORMANCE.md", "[comm][bench]") {
  CHECK(findCollective("allreduce")->busFactor(4) == Approx(1.5));  // 2(n-1)/n
  CHECK(findCollective("allreduce")->busFactor(2) == Approx(1.0));
  CHECK(findCollective("allgather")->busFactor(4) == Approx(0.75));  // (n-1)/n
  CHECK(findCollective("reducescatter")->busFactor(8) == Approx(0.875));
  CHECK(findCollective("alltoall")->busFactor(4) == Approx(0.75));
  CHECK(findCollective("broadcast")->busFactor(16) == Approx(1.0));
  CHECK(findCollective("gather") == nullptr);
}

TEST_CASE("sweep sizes become element counts as in nccl-tests", "[comm][bench]") {
  const auto ag = findCollective("allgather")->counts(1024, 4, 4);
  CHECK(ag.send == 64);
  CHECK(ag.recv == 256);
  CHECK(ag.param == 64);
  const auto rs = findCollective("reducescatter")->counts(1000, 4, 3);  // 250 elements, 83 each
  CHECK(rs.send == 249);
  CHECK(rs.recv == 83);
  CHECK(reportedBytes(rs, 4) == 996);
  const auto ar = findCollective("allreduce")->counts(28, 4, 4);
  CHECK(ar.param == 7);
  CHECK(findCollective("allgather")->counts(8, 4, 4).param == 0);
}

TEST_CASE("closed-form expected values", "[comm][bench]") {
  const Counts c{4, 4, 4};
  // allreduce sum at 2 ranks of element 0: inputs 1 (rank 0) and 4 (rank 1).
  CHECK(inputValue(0, 0, ReduceOp::kSum) == 1);
  CHECK(inputValue(1, 0, ReduceOp::kSum) == 4);
  const auto* ar = findCollective("allreduce");
  CHECK(ar->expected(0, 0, 2, c, ReduceOp::kSum, 0, DType::kFloat32) == 5);
  CHECK(ar->expected(0, 1, 2, c, ReduceOp::kMax, 0, DType::kFloat32) == 4);
  CHECK(ar->expected(0, 0, 2, c, ReduceOp::kAvg, 0, DType::kFloat32) == 2.5);
  CHECK(ar->expected(0, 0, 2, c, ReduceOp::kAvg, 0, DType::kInt32) == 2);
  CHECK(ar->expected(0, 0, 3, c, ReduceOp::kProd, 0, DType::kFloat32) == 2);  // 1*2*1
  // allgather: element r*param+i comes from rank r.
  const Counts g{2, 6, 2};
  CHECK(findCollective("allgather")->expected(5, 0, 3, g, ReduceOp::kSum, 0, DType::kInt32) ==
        inputValue(2, 1, ReduceOp::kSum));
  // broadcast from root 1.
  CHECK(findCollective("broadcast")->expected(3, 0, 2, c, ReduceOp::kSum, 1, DType::kInt32) ==
        inputValue(1, 3, ReduceOp::kSum));
}

TEST_CASE("sweep sizes and option validation", "[comm][bench]") {
  SweepOptions o;
  o.minBytes = 8;
  o.maxBytes = 64;
  CHECK(sweepSizes(o) == std::vector<uint64_t>{8, 16, 32, 64});
  o.factor = 1.1;
  o.minBytes = 1;
  o.maxBytes = 3;
  CHECK(sweepSizes(o) == std::vector<uint64_t>{1, 2, 3});
  using Catch::Matchers::Contains;
  SweepOptions bad;
  bad.minBytes = 2;
  bad.maxBytes = 1;
  CHECK_THROWS_WITH(validate(bad, 2), Contains("larger than maximum"));
  bad = SweepOptions{};
  bad.factor = 1.0;
  CHECK_THROWS_WITH(validate(bad, 2), Contains("must be greater than 1"));
  bad = SweepOptions{};
  bad.root = 2;
  CHECK_THROWS_WITH(validate(bad, 2), Contains("root 2 is not a rank"));
  bad = SweepOptions{};
  bad.iters = 0;
  CHECK_THROWS_AS(validate(bad, 2), ddp::ConfigError);
}

TEST_CASE("the table has nccl-tests' columns and JSON rows carry the same numbers", "[comm][bench][report]") {
  Result r;
  r.op = "allreduce";
  r.bytes = 1024;
  r.count = 256;
  r.type = "float";
  r.redop = "sum";
  r.timeUs = 10.5;
  r.algbwGBps = 0.1;
  r.busbwGBps = 0.15;
  r.wrong = 0;
  const auto row = tableRow(r, std::nullopt);
  CHECK(row.find("        1024           256     float     sum      -1") == 0);
  CHECK(row.find("N/A") != std::string::npos);
  const auto header = tableHeader("mpi", "allreduce", 2, SweepOptions{});
  CHECK(header.find("size         count      type   redop    root     time   algbw   busbw #wrong") !=
        std::string::npos);
  CHECK(tableFooter({r}).find("# Out of bounds values : 0 OK") == 0);
  const auto j = toJson(r);
  for (const char* key :
       {"op", "bytes", "count", "type", "redop", "root", "time_us", "algbw_gbps", "busbw_gbps", "wrong", "in_place"}) {
    CHECK(j.contains(key));
  }
  CHECK(j["busbw_gbps"] == 0.15);
}
