// The real logs and runs of the GPU check (tests/data/gpu-h200, tools/gpu-check.sh on one
// NVIDIA H200 with NCCL 2.28.9): what the profiler reads from them. The expected counts were
// taken from the files with grep, not from the parser.
#include "ddp/profiler/diagnosis/findings.hpp"
#include "ddp/profiler/nccl/facts.hpp"
#include "ddp/profiler/run.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace ddp::profiler;

namespace {

const std::string kDir = std::string(DDP_TEST_DATA_DIR) + "/gpu-h200/";

bool hasFinding(const std::vector<Finding>& findings, const std::string& kind) {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return findingKindName(f.kind) == kind; });
}

}  // namespace

TEST_CASE("H200: ddpbench's NCCL 2.28.9 log with COLL lines, one rank", "[gpu-fixtures]") {
  auto f = readNcclLogs({kDir + "ddpbench-np1.nccl.log"});
  CHECK(f.ncclVersion == "2.28.9");
  CHECK(f.cudaVersion == "13.0");
  CHECK(f.cudaDriverVersion == 13000);
  CHECK(f.hosts == std::set<std::string>{"vm"});
  CHECK(f.nranks == 1);
  CHECK(f.network == "Socket");
  CHECK(f.socketInterfaces == std::set<std::string>{"eth0"});
  CHECK(f.failureKinds == std::set<FailureKind>{FailureKind::kNoIbDevice});
  CHECK_FALSE(f.hasWarn());
  CHECK(f.linesRead == 4037);
  CHECK(f.linesRecognised == 4037);
  CHECK(f.linesDamaged == 0);
  CHECK(f.initCompleteLines == 1);
  CHECK(f.collOps.at("AllReduce") == 1027);
  REQUIRE(f.initTimings.size() == 1);
  CHECK(f.initTimings[0].nranks == 1);
  CHECK(f.initTimings[0].totalSeconds == Approx(0.39));
}

TEST_CASE("H200: PyTorch 2.11's own DDP over NCCL, one rank", "[gpu-fixtures]") {
  auto f = readNcclLogs({kDir + "torch-ddp-np1.nccl.log"});
  CHECK(f.ncclVersion == "2.28.9");
  CHECK(f.nranks == 1);
  CHECK(f.linesRead == 611);
  CHECK(f.linesRecognised == 611);
  CHECK(f.collOps.at("AllReduce") == 178);
  REQUIRE(f.initTimings.size() == 1);
  CHECK(f.initTimings[0].totalSeconds == Approx(0.30));
}

TEST_CASE("H200: NCCL lines among ddpbench's table on one console", "[gpu-fixtures]") {
  auto f = readNcclLogs({kDir + "ddpbench-console.log"});
  CHECK(f.ncclVersion == "2.28.9");
  CHECK(f.linesRead == 106);
  CHECK(f.linesRecognised == 94);  // the lines that say NCCL; the table's are not NCCL's
  CHECK(f.initCompleteLines == 1);
}

TEST_CASE("H200: two ranks on one GPU are refused as duplicate_gpu", "[gpu-fixtures]") {
  auto f = readNcclLogs({kDir + "duplicate-gpu.log"});
  CHECK(f.warnLines == 2);
  CHECK(f.failureKinds == std::set<FailureKind>{FailureKind::kDuplicateGpu});
  REQUIRE(f.warnings.size() == 2);
  CHECK(f.warnings[0].file == "init.cc");
  CHECK(f.warnings[0].line == 904);
}

TEST_CASE("H200: train resnet18 on the GPU is data-bound, and the profiler says so", "[gpu-fixtures]") {
  auto run = loadRun(kDir + "runs/resnet18-fp32");
  CHECK(run.problems.empty());
  REQUIRE(run.timings.size() == 1);
  CHECK(run.timings.at(0).size() == 60);
  REQUIRE(run.nccl.has_value());
  CHECK(run.nccl->ncclVersion == "2.28.9");
  auto timing = analyseTimings(run);
  REQUIRE(timing.ranks.size() == 1);
  CHECK(timing.ranks[0].stepMsMedian == Approx(21.36).margin(0.01));
  auto findings = diagnose(run, timing);
  CHECK(hasFinding(findings, "data_bound"));
  // One rank on one host: neither a socket fallback nor an NCCL error to report.
  CHECK_FALSE(hasFinding(findings, "socket_fallback"));
  CHECK_FALSE(hasFinding(findings, "nccl_error"));
}
