// The NCCL logs derived from real excerpts in public issues (tests/data/nccl-logs, copied from
// ../shared/fixtures/nccl-logs with its README), checked for the facts their README lists.
#include "ddp/profiler/nccl/facts.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace ddp::profiler;
using Strings = std::set<std::string>;

namespace {

NcclFacts fixture(const std::string& name) {
  return readNcclLogs({std::string(DDP_TEST_DATA_DIR) + "/nccl-logs/" + name});
}

bool hasEdge(const NcclFacts& f, int from, int to, TransportClass t) {
  return f.edges.count({from, to, static_cast<int>(t)}) == 1;
}

}  // namespace

TEST_CASE("01 NCCL 2.3.7: legacy init lines, Socket on ib0, 8 ranks", "[profiler][fixtures]") {
  auto f = fixture("01-nccl207-v2.3.7-ib0-socket-8ranks.log");
  CHECK(f.ncclVersion == "2.3.7");
  CHECK(f.cudaVersion == "9.0");
  CHECK(f.nranks == 8);
  CHECK(f.network == "Socket");
  CHECK(f.socketInterfaces.count("ib0") == 1);
  CHECK(f.hosts == Strings{"node-a"});
  CHECK_FALSE(f.hasWarn());
}

TEST_CASE("02 NCCL 2.4.7: empty host field, old ring edges over NET/IB, env settings", "[profiler][fixtures]") {
  auto f = fixture("02-tensorflow34375-v2.4.7-empty-hostname-ring-net-ib.log");
  CHECK(f.ncclVersion == "2.4.7");
  CHECK_FALSE(f.cudaVersion);
  CHECK(f.nranks == 2);
  CHECK(hasEdge(f, 1, 0, TransportClass::kNetIb));
  CHECK(hasEdge(f, 0, 1, TransportClass::kNetIb));
  CHECK(f.envOverrides.at("NCCL_IB_GID_INDEX") == "3");
  CHECK(f.envOverrides.at("NCCL_IB_SL") == "3");
  CHECK(f.initCompleteLines == 1);
  CHECK(f.network == "IB");
}

TEST_CASE("03 Socket after NET/IB : No device found, connection timeouts", "[profiler][fixtures]") {
  auto f = fixture("03-oneflow3586-socket-connect-timed-out.log");
  CHECK_FALSE(f.ncclVersion);
  CHECK(f.network == "Socket");
  CHECK(hasEdge(f, 0, 1, TransportClass::kNetSocket));
  CHECK(hasEdge(f, 1, 0, TransportClass::kNetSocket));
  CHECK(f.failureKinds.count(FailureKind::kConnectionTimeout) == 1);
  CHECK(f.failureKinds.count(FailureKind::kNoIbDevice) == 1);
  CHECK(f.hosts == Strings{"node-a"});
}

TEST_CASE("04 4 hosts x 8 GPUs, legacy P2P/IPC ring edges", "[profiler][fixtures]") {
  auto f = fixture("04-nccltests29-4x8-ring-p2p-ipc.log");
  CHECK(f.transports == std::set<TransportClass>{TransportClass::kP2P});
  CHECK(f.hosts == Strings{"node-a", "node-b", "node-c", "node-d"});
  CHECK(hasEdge(f, 26, 24, TransportClass::kP2P));
}

TEST_CASE("05 NCCL 2.2.13: INFO/WARN without the NCCL tag, connect timeout, -> 2 trail", "[profiler][fixtures]") {
  auto f = fixture("05-nccltests15-v2.2.13-legacy-INFO-no-NCCL-tag-timeout.log");
  CHECK(f.ncclVersion == "2.2.13");
  CHECK(f.nranks == 2);
  CHECK(f.network == "Socket");
  REQUIRE(f.warnings.size() >= 2);
  CHECK(f.warnings[0].file == "include/socket.h");
  CHECK(f.warnings[0].line == 360);
  CHECK(f.warnings[1].line == 371);
  CHECK(f.failureKinds.count(FailureKind::kConnectionTimeout) == 1);
  CHECK(f.failureKinds.count(FailureKind::kSocketAbort) == 1);
  CHECK(f.returnCodes.count(2) == 1);
}

TEST_CASE("06 SHM/direct/direct between 4 local ranks", "[profiler][fixtures]") {
  auto f = fixture("06-nccl1609-h800-shm-direct-4ranks.log");
  CHECK(f.transports == std::set<TransportClass>{TransportClass::kShm});
  CHECK(hasEdge(f, 2, 3, TransportClass::kShm));
  CHECK(hasEdge(f, 3, 2, TransportClass::kShm));
  CHECK(f.hosts == Strings{"gpu-node-01"});
  CHECK_FALSE(f.hasWarn());
}

TEST_CASE("07 launcher timestamps before every line, proxy WARNs, -> 3 trails", "[profiler][fixtures]") {
  auto f = fixture("07-nccl1610-launcher-timestamp-prefix-proxy-warn.log");
  REQUIRE(f.warnings.size() == 3);
  CHECK(f.warnings[0].file == "proxy.cc");
  CHECK(f.warnings[0].line == 1458);
  CHECK(f.warnings[1].line == 1497);
  CHECK(f.warnings[2].line == 1521);
  CHECK(f.returnCodes.count(3) == 1);
}

TEST_CASE("08 NCCL 2.27.6 version as an INFO line, 2 hosts, driver version", "[profiler][fixtures]") {
  auto f = fixture("08-nccl1804-v2.27.6-2node-version-as-info-line.log");
  CHECK(f.ncclVersion == "2.27.6");
  CHECK(f.cudaVersion == "12.9");
  CHECK(f.cudaDriverVersion == 12090);
  CHECK(f.hosts == Strings{"node-03", "node-04"});
  CHECK_FALSE(f.hasWarn());
}

TEST_CASE("09 interleaved Broadcast COLL lines", "[profiler][fixtures]") {
  auto f = fixture("09-nccl147-interleaved-broadcast-coll-lines.log");
  CHECK(f.collOps.at("Broadcast") >= 2);
  CHECK(f.nranks == 8);
  CHECK(f.linesDamaged >= 1);
  CHECK(f.hosts == Strings{"compute062"});
}

TEST_CASE("10 AllGather, ReduceScatter and AllReduce COLL records", "[profiler][fixtures]") {
  auto f = fixture("10-torchtitan1369-allgather-reducescatter-allreduce-coll.log");
  CHECK(f.collOps.count("AllGather") == 1);
  CHECK(f.collOps.count("ReduceScatter") == 1);
  CHECK(f.collOps.count("AllReduce") == 1);
  CHECK(f.nranks == 2);
  CHECK(f.hosts == Strings{"node01"});
}

TEST_CASE("11 Send/Recv records with (nil) buffers", "[profiler][fixtures]") {
  auto f = fixture("11-nccl584-send-recv-coll-with-ellipsis.log");
  CHECK(f.collOps.count("Send") == 1);
  CHECK(f.collOps.count("Recv") == 1);
  CHECK(f.nranks == 2);
}

TEST_CASE("12 Init timings, colon form; Init COMPLETE for six ranks", "[profiler][fixtures]") {
  auto f = fixture("12-nccltests273-init-timings-colon-form-gdb-line.log");
  CHECK(f.initCompleteLines == 6);
  CHECK(f.nranks == 8);
  bool rank2 = false;
  for (const auto& t : f.initTimings) rank2 = rank2 || (t.rank == 2 && t.nranks == 8 && t.totalSeconds == Approx(0.66));
  CHECK(rank2);
}

TEST_CASE("13 Init timings, dash form; NET/Socket edges on two devices", "[profiler][fixtures]") {
  auto f = fixture("13-nccltests284-table-header-interleaved-init-timings-dash-form.log");
  CHECK(f.nranks == 2);
  CHECK(hasEdge(f, 1, 0, TransportClass::kNetSocket));
  CHECK(f.network == "Socket");
  bool rank1 = false;
  for (const auto& t : f.initTimings) rank1 = rank1 || (t.rank == 1 && t.totalSeconds == Approx(0.26));
  CHECK(rank1);
  CHECK(f.hosts == Strings{"demo-master", "demo-worker"});
}

TEST_CASE("14 a bare nccl-tests table holds no NCCL line", "[profiler][fixtures]") {
  auto f = fixture("14-nccltests119-perf-table-tail-with-avg-busbw-footer.log");
  CHECK(f.linesRecognised == 0);
  CHECK(f.linesRead > 0);
}

TEST_CASE("15 2 hosts x 8: P2P/direct pointer inside, NET/IB/0/GDRDMA across", "[profiler][fixtures]") {
  auto f = fixture("15-nccltests133-2x8-p2p-direct-pointer-net-ib-gdrdma.log");
  CHECK(f.transports == std::set<TransportClass>{TransportClass::kNetIb, TransportClass::kP2P});
  CHECK(hasEdge(f, 13, 4, TransportClass::kNetIb));
  CHECK(hasEdge(f, 5, 12, TransportClass::kNetIb));
  CHECK(f.gdrdma == true);
  CHECK(f.hosts == Strings{"hosta", "hostb"});
}

TEST_CASE("16 IB completion errors from a plugin, -> 6 trail", "[profiler][fixtures]") {
  auto f = fixture("16-nccl1737-ib-plugin-completion-error-vendor-err.log");
  CHECK(f.failureKinds == std::set<FailureKind>{FailureKind::kIbCompletionError});
  REQUIRE(f.warnings.size() == 4);
  for (const auto& w : f.warnings) {
    CHECK(w.file == "ib_plugin.c");
    CHECK(w.line == 1007);
  }
  CHECK(f.returnCodes.count(6) == 1);
  CHECK(f.hosts == Strings{"gn-1024u07"});
}

TEST_CASE("17 the AWS OFI plugin by its own name, behind CloudWatch's prefix", "[profiler][fixtures]") {
  auto f = fixture("17-awsofi715-cloudwatch-prefix-libfabric-plugin.log");
  CHECK(f.linesRecognised == 10);
  CHECK(f.hosts == Strings{"algo-1"});
  CHECK(f.network == "AWS Libfabric");
  CHECK(f.netPlugins == Strings{"AWS Libfabric"});
  CHECK(transportNames(f) == std::vector<std::string>{"NET/AWS Libfabric"});
  CHECK(f.gdrdma == true);
  REQUIRE(hasEdge(f, 3, 10, TransportClass::kNetOther));
  CHECK(f.edges.at({3, 10, static_cast<int>(TransportClass::kNetOther)}).proxyRank == 2);
  CHECK(toJson(f)["transports"] == nlohmann::json::array({"NET/AWS Libfabric"}));
}

TEST_CASE("18 PyTorch's watchdog timeout among NCCL's lines is a timeout", "[profiler][fixtures]") {
  auto f = fixture("18-basicsr737-torch-watchdog-timeout.log");
  CHECK(f.linesRead == 4);
  CHECK(f.linesRecognised == 2);
  CHECK(f.failureKinds == std::set<FailureKind>{FailureKind::kTimeout});
  CHECK(classifyTorchNcclLine("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote "
                              "process exited or there was a network error, NCCL version 2.19.3\nncclRemoteError: A "
                              "call failed possibly due to a network error or a remote process exiting prematurely.") ==
        FailureKind::kRemoteError);
}

TEST_CASE("19 lines behind two nested Ray prefixes", "[profiler][fixtures]") {
  auto f = fixture("19-fastsafetensors36-nested-ray-prefixes-mnnvl.log");
  CHECK(f.linesRecognised == 7);
  CHECK(f.hosts == Strings{"spark2"});
  CHECK(f.nranks == 2);
  CHECK(f.nnodes == 2);
}

TEST_CASE("20 PyTorch's remote error behind a Ray prefix names the NCCL version too", "[profiler][fixtures]") {
  auto f = fixture("20-openrlhf621-ray-repeated-torch-remote-error.log");
  CHECK(f.failureKinds == std::set<FailureKind>{FailureKind::kRemoteError});
  CHECK(f.ncclVersion == "2.21.5");
  CHECK(f.linesRecognised == 1);
}

TEST_CASE("21 NVLS from its communicator and channels, with no edge line", "[profiler][fixtures]") {
  auto f = fixture("21-nccl1609-h800-nvls-comm-channels.log");
  CHECK(f.transports == std::set<TransportClass>{TransportClass::kNvls});
  CHECK(f.edges.empty());
  CHECK(f.linesRecognised == 10);
  // "0 nvls channels" is no NVLS.
  auto none = readNcclLogs({std::string(DDP_TEST_DATA_DIR) +
                            "/nccl-logs/13-nccltests284-table-header-interleaved-init-timings-dash-form.log"});
  CHECK(none.transports.count(TransportClass::kNvls) == 0);
}

TEST_CASE("22 CollNet over SHARP, and SHARP's tree lock failing", "[profiler][fixtures]") {
  auto f = fixture("22-nccl1219-collnet-sharp-tree-lock-failed.log");
  CHECK(f.transports == std::set<TransportClass>{TransportClass::kCollNet});
  CHECK(f.failureKinds.count(FailureKind::kCollNetFailed) == 1);
  CHECK(f.warnLines == 1);
  CHECK(f.returnCodes.count(2) == 1);
  CHECK(f.hosts == Strings{"node"});
}

TEST_CASE("23 SHARP init error and CollNet's fallback to point-to-point", "[profiler][fixtures]") {
  auto f = fixture("23-nccl1050-sharp-init-error-collnet-fallback.log");
  CHECK(f.failureKinds == std::set<FailureKind>{FailureKind::kCollNetFailed});
  CHECK(f.warnLines == 2);
  CHECK(f.transports == std::set<TransportClass>{TransportClass::kNvls});
  CHECK(f.hosts == Strings{"ib-vm-40", "ib-vm-41", "ib-vm-43", "ib-vm-52"});
}
