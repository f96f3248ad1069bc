// Every line shape of the NCCL field guide (../shared/nccl-log-format.md), on lines written for
// the tests, with the parsed struct checked.
#include "ddp/common/json_text.hpp"
#include "ddp/profiler/nccl/facts.hpp"
#include "ddp/profiler/nccl/line.hpp"

#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace ddp::profiler;

namespace {

NcclFacts factsOf(std::initializer_list<std::string_view> lines) {
  NcclFactsBuilder builder;
  for (auto line : lines) builder.addLine(line);
  return builder.finish();
}

}  // namespace

TEST_CASE("the prefix is found behind every wrapper seen in real logs", "[profiler][parser]") {
  const std::string_view payload = "node-a:4120:4180 [3] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>";
  for (std::string_view wrapper : {"", "[1,0]<stdout>:", "(RayTrainWorker pid=615, ip=10.72.7.6) ", "\x1b[0m ", "451 ",
                                   " 2025-02-18 12:54 ", "[2026-04-28 14:14:49] "}) {
    std::string line = std::string(wrapper) + std::string(payload);
    INFO("line: " << line);
    auto parsed = parseNcclLine(line);
    REQUIRE(parsed);
    CHECK(parsed->hasPrefix);
    CHECK(parsed->host == "node-a");
    CHECK(parsed->pid == 4120);
    CHECK(parsed->tid == 4180);
    CHECK(parsed->dev == 3);
    CHECK(parsed->level == Level::kInfo);
    CHECK(parsed->message == "Bootstrap : Using eth0:10.0.0.1<0>");
    CHECK_FALSE(parsed->damaged);
  }
}

TEST_CASE("WARN, TRACE and legacy lines", "[profiler][parser]") {
  auto warn = parseNcclLine(
      "node-b:77:90 [1] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.1.1.2<4000> failed : Software "
      "caused connection abort");
  REQUIRE(warn);
  CHECK(warn->level == Level::kWarn);
  CHECK(warn->file == "misc/socket.cc");
  CHECK(warn->fileLine == 483);
  CHECK(classifyFailure(warn->message) == FailureKind::kSocketAbort);

  auto func = parseNcclLine(
      "[2025-03-01 10:00:00] node-b:77:90 [1] proxy.cc:1519 (proxyService) NCCL WARN [Proxy Service 0] Failed to "
      "execute operation Connect from rank 0, retcode 2");
  REQUIRE(func);
  CHECK(func->host == "node-b");
  CHECK(func->file == "proxy.cc");
  CHECK(func->fileLine == 1519);
  CHECK(func->message.substr(0, 19) == "[Proxy Service 0] F");

  auto trace = parseNcclLine("n1:5:6 [0] 1234.567890 ncclCommInitRank:42 NCCL TRACE comm 0x1 rank 0");
  REQUIRE(trace);
  CHECK(trace->level == Level::kTrace);
  CHECK(trace->message == "comm 0x1 rank 0");

  auto legacyInfo = parseNcclLine("host1:50535:50535 [0] INFO NET : Using interface ib0:192.0.2.62<0>");
  REQUIRE(legacyInfo);
  CHECK(legacyInfo->level == Level::kInfo);
  CHECK(legacyInfo->message == "NET : Using interface ib0:192.0.2.62<0>");
  auto legacyWarn =
      parseNcclLine("host1:1:1 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out");
  REQUIRE(legacyWarn);
  CHECK(legacyWarn->level == Level::kWarn);
  CHECK(legacyWarn->file == "include/socket.h");
  CHECK(legacyWarn->fileLine == 360);
  CHECK(classifyFailure(legacyWarn->message) == FailureKind::kConnectionTimeout);

  auto emptyHost = parseNcclLine(":6521:7002 [0] NCCL INFO Trees disabled");
  REQUIRE(emptyHost);
  CHECK(emptyHost->hasPrefix);
  CHECK(emptyHost->host.empty());
  CHECK(emptyHost->pid == 6521);

  CHECK_FALSE(parseNcclLine("I0917 10:00:00.1 123 ev_epoll_linux.c:82] Use engine: epollex"));
  CHECK_FALSE(parseNcclLine("#  Rank  0 Group  0 Pid  1 on node-03 device  0 [0000:4e:00] NVIDIA H100"));
  CHECK_FALSE(parseNcclLine(""));
  CHECK_FALSE(parseNcclLine("\x01\x02\xff NCCL"));
}

TEST_CASE("two interleaved lines: the complete one wins and the line is marked", "[profiler][parser]") {
  auto line = parseNcclLine(
      "compute062:36771:36771 [2] NCCL INFO Broadcast: opCount 0 sendbcompute062:36781:36781 [7] NCCL INFO Broadcast: "
      "opCount 1 sendbuff 0x1 recvbuff 0x1 count 25503912 datatype 6 op 0 root 0 comm 0x2 [nranks=8] stream 0x3");
  REQUIRE(line);
  CHECK(line->damaged);
  CHECK(line->pid == 36781);
  CHECK(line->dev == 7);
  auto coll = parseColl(line->message);
  REQUIRE(coll);
  CHECK(coll->op == "Broadcast");
  CHECK(coll->opCount == 1);
  CHECK(coll->count == 25503912);
  CHECK(coll->datatype == 6);
  CHECK(coll->nranks == 8);
  auto summary = parseCollSummary(line->message);
  REQUIRE(summary);
  CHECK(summary->op == "Broadcast");
  CHECK(summary->nranks == 8);
}

TEST_CASE("the version line, bare or as INFO", "[profiler][parser]") {
  auto bare = parseVersion("NCCL version 2.3.7+cuda9.0");
  REQUIRE(bare);
  CHECK(bare->nccl == "2.3.7");
  CHECK(bare->cuda == "9.0");
  auto placeholder = parseVersion("NCCL version 2.4.7+cudaCUDA_MAJOR.CUDA_MINOR");
  REQUIRE(placeholder);
  CHECK(placeholder->nccl == "2.4.7");
  CHECK(placeholder->cuda.empty());
  auto facts = factsOf({"node-b:1066:1066 [3] NCCL INFO NCCL version 2.25.1+cuda12.8"});
  CHECK(facts.ncclVersion == "2.25.1");
  CHECK(facts.cudaVersion == "12.8");
  CHECK_FALSE(parseVersion("NCCL version unknown"));
}

TEST_CASE("every edge form from 2.4 to 2.28", "[profiler][parser]") {
  struct Case {
    std::string_view line;
    int channel, from, to, direction;
    TransportClass transport;
    int netDevice, proxy;
    bool gdr;
  };
  const Case cases[] = {
      {"Ring 00 : 26[2] -> 24[0] via P2P/IPC", 0, 26, 24, 0, TransportClass::kP2P, -1, -1, false},
      {"Ring 00 : 1 -> 0 [receive] via NET/IB/0", 0, 1, 0, -1, TransportClass::kNetIb, 0, -1, false},
      {"Ring 00 : 3[b0] -> 0[80] via direct shared memory", 0, 3, 0, 0, TransportClass::kShm, -1, -1, false},
      {"Ring 00 : 1[18100000] -> 0[435e00000] [receive] via NET/IB/0/GDRDMA", 0, 1, 0, -1, TransportClass::kNetIb, 0,
       -1, true},
      {"Channel 00 : 1[1e0] -> 0[1e0] [receive] via NET/Socket/0", 0, 1, 0, -1, TransportClass::kNetSocket, 0, -1,
       false},
      {"Channel 03/1 : 9[3] -> 2[2] [send] via NET/IB/1(12)/GDRDMA", 3, 9, 2, 1, TransportClass::kNetIb, 1, 12, true},
      {"Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM/read", 0, 3, 4, 0, TransportClass::kP2P, -1, -1, false},
      {"Channel 07 : 2[6] -> 3[7] via SHM/direct/direct", 7, 2, 3, 0, TransportClass::kShm, -1, -1, false},
      {"Channel 01 : 3[89000] -> 4[8a000] via P2P/direct pointer/read", 1, 3, 4, 0, TransportClass::kP2P, -1, -1,
       false},
      {"Channel 02/0 : 0[0] -> 8[0] [send] via NET/IBext_v8/0/GDRDMA(PCI)/Shared", 2, 0, 8, 1, TransportClass::kNetIb,
       0, -1, true},
      {"Channel 00/0 : 1[1] -> 0[0] [receive] via NET/AWS Libfabric/0", 0, 1, 0, -1, TransportClass::kNetOther, 0, -1,
       false},
      {"Channel 04/0 : 0[0] -> 1[1] via NVLS/unicast", 4, 0, 1, 0, TransportClass::kNvls, -1, -1, false},
  };
  for (const auto& c : cases) {
    INFO(c.line);
    auto e = parseEdge(c.line);
    REQUIRE(e);
    CHECK(e->channel == c.channel);
    CHECK(e->from == c.from);
    CHECK(e->to == c.to);
    CHECK(e->direction == c.direction);
    CHECK(e->transport == c.transport);
    CHECK(e->netDevice == c.netDevice);
    CHECK(e->proxyRank == c.proxy);
    CHECK(e->gdr == c.gdr);
  }
  // Ring orders and tree lines are not edges.
  CHECK_FALSE(parseEdge("Channel 00/02 :    0   1   2   3"));
  CHECK_FALSE(parseEdge("Channel 00 :    0   1"));
  CHECK_FALSE(parseEdge("Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1"));
}

TEST_CASE("network selection and its fallbacks", "[profiler][parser]") {
  auto ib = factsOf({"n:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:192.168.11.1<0>"});
  CHECK(ib.network == "IB");
  CHECK(ib.ibDevices == std::set<std::string>{"mlx5_0:1/IB", "mlx5_1:1/IB"});
  auto erdma = factsOf({"n:1:1 [0] NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE [RO]; OOB eth0:192.0.2.76<0>",
                        "n:1:1 [0] NCCL INFO Using network IB"});
  CHECK(erdma.network == "IB (eRDMA)");  // NCCL's IB transport on Alibaba's erdma_* devices
  CHECK(erdma.ibDevices.count("erdma_0:1/RoCE") == 1);
  // Mellanox RoCE prints the same link layer: the device name alone tells them apart.
  CHECK(factsOf({"n:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:192.0.2.76<0>"}).network == "IB");
  auto merged =
      factsOf({"n:1:1 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} ; OOB eth0:10.0.0.1<0>"});
  CHECK(merged.ibDevices == std::set<std::string>{"mlx5_2:1/RoCE", "mlx5_3:1/RoCE"});
  auto socket = factsOf({"n:1:1 [0] NCCL INFO NET/IB : No device found.",
                         "n:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>"});
  CHECK(socket.network == "Socket");
  CHECK(socket.socketInterfaces == std::set<std::string>{"eth0", "eth1"});
  CHECK(socket.failureKinds.count(FailureKind::kNoIbDevice) == 1);
  auto named = factsOf({"n:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:1.2.3.4<0>",
                        "n:1:1 [0] NCCL INFO Using network Socket"});
  CHECK(named.network == "Socket");  // "Using network" is the choice made
  CHECK(factsOf({"n:1:1 [0] NCCL INFO NET/IB : Using interface ib0 for sideband communication"}).network ==
        std::nullopt);
}

TEST_CASE("an edge whose prefix a logger split onto the line before is still an edge", "[profiler][parser]") {
  auto f = factsOf({"node-a:1066:1090 [3] NCCL INFO ", "Channel 00/0 : 3[3] -> 11[3] [send] via NET/IB/3/GDRDMA",
                    "Ring 01 : 2 -> 3 via P2P/IPC"});
  CHECK(f.edges.count({3, 11, static_cast<int>(TransportClass::kNetIb)}) == 1);
  CHECK(f.edges.count({2, 3, static_cast<int>(TransportClass::kP2P)}) == 1);
  CHECK(f.linesRecognised == 3);
  CHECK(factsOf({"Channel 5 of the TV: tonight"}).edges.empty());  // not every "Channel" is an edge
}

TEST_CASE("env overrides, init lines, init timings, COLL records, return-code trails", "[profiler][parser]") {
  auto env = parseEnvOverride("NCCL_IB_DISABLE set by environment to 1.");
  REQUIRE(env);
  CHECK(env->name == "NCCL_IB_DISABLE");
  CHECK(env->value == "1");
  auto hca = parseEnvOverride("NCCL_IB_HCA set to erdma_0,erdma_1");  // net_ib's own line
  REQUIRE(hca);
  CHECK(hca->name == "NCCL_IB_HCA");
  CHECK(hca->value == "erdma_0,erdma_1");
  CHECK_FALSE(parseEnvOverride("NCCL_IB_HCA for rank 3 set to x"));
  auto f = factsOf({
      "n:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC",
      "n:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1e0 - Init COMPLETE",
      "n:1:1 [1] NCCL INFO comm 0x6 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2e0 commId 0x9 - Init START",
      "n:1:1 [1] NCCL INFO ncclCommInitRankConfig comm 0x6 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2e0 commId 0x9 - "
      "Init COMPLETE",
      "n:1:1 [0] NCCL INFO comm 0x7 rank 0 nRanks 3 nNodes 3 localRanks 1 localRank 0 MNNVL 0",
      "n:1:1 [0] NCCL INFO Init timings: rank 2 nranks 16 total 1.08 (kernels 0.51, bootstrap 0.22, allgathers 0.01, "
      "topo 0.28, graphs 0.04, connections 0.02, rest 0.01)",
      "n:1:1 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 3 nranks 8 total 55.01 (kernels 52.45, alloc "
      "0.41, bootstrap 0.57, allgathers 0.08, topo 1.10, graphs 0.01, connections 0.39, rest 0.00)",
      "n:1:1 [0] NCCL INFO AllReduce: opCount 1f sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 root 0 comm 0x5 "
      "[nranks=2] stream 0x9",
      "n:1:1 [0] NCCL INFO Send: opCount d62 sendbuff 0x1 recvbuff (nil) count 2420736 datatype 7 op 0 root 1 comm 0x5 "
      "[nranks=2] stream 0x9",
      "n:1:1 [0] NCCL INFO misc/socket.cc:564 -> 2",
      "n:1:1 [0] NCCL INFO group.cc:65 -> 2 [Async thread]",
      "n:1:1 [0] NCCL INFO cudaDriverVersion 12020",
      "n:1:1 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
  });
  CHECK(f.envOverrides.at("NCCL_P2P_LEVEL") == "LOC");
  CHECK(f.initCompleteLines == 2);
  CHECK(f.nranks == 16);  // the largest communicator named
  CHECK(f.nnodes == 3);
  REQUIRE(f.initTimings.size() == 2);
  CHECK(f.initTimings[0].rank == 2);
  CHECK(f.initTimings[0].totalSeconds == Approx(1.08));
  CHECK(f.initTimings[1].rank == 3);
  CHECK(f.initTimings[1].totalSeconds == Approx(55.01));
  CHECK(f.collOps.at("AllReduce") == 1);
  CHECK(f.collOps.at("Send") == 1);
  CHECK(f.returnCodes.at(2) == 2);
  CHECK(f.cudaDriverVersion == 12020);
  CHECK(f.gdrdma == true);
  CHECK(f.linesRecognised == f.linesRead);
  auto send = parseColl(
      "Send: opCount d62 sendbuff 0x1 recvbuff (nil) count 2420736 datatype 7 op 0 root 1 comm 0x5 [nranks=2] stream "
      "0x9");
  REQUIRE(send);
  CHECK(send->opCount == 0xd62);
  CHECK(send->root == 1);
}

TEST_CASE("failure kinds", "[profiler][parser]") {
  CHECK(classifyFailure("Connect to 10.38.10.112<21724> failed : Connection refused") ==
        FailureKind::kConnectionRefused);
  CHECK(classifyFailure("Call to connect returned Connection timed out, retrying") == FailureKind::kConnectionTimeout);
  CHECK(classifyFailure("socketProgress: Connection closed by remote peer node1<57557>") == FailureKind::kSocketAbort);
  CHECK(classifyFailure("NET/IB : Got completion with error 4, opcode 1, len 0, vendor err 81") ==
        FailureKind::kIbCompletionError);
  CHECK(classifyFailure("NCCL error: unhandled system error, NCCL version 2.7.8") ==
        FailureKind::kUnhandledSystemError);
  CHECK(classifyFailure("NCCL error: unhandled cuda error") == FailureKind::kUnhandledCudaError);
  CHECK(classifyFailure("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)") == FailureKind::kTimeout);
  CHECK(classifyFailure("NET/IB : No device found.") == FailureKind::kNoIbDevice);
  CHECK(classifyFailure("Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60") ==
        FailureKind::kDuplicateGpu);
  CHECK_FALSE(classifyFailure("Connected all rings"));
}

TEST_CASE("edges aggregate into a bounded map and a GDR verdict", "[profiler][parser]") {
  NcclFactsBuilder builder;
  for (int i = 0; i < 10000; ++i) {
    builder.addLine("a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC");
    builder.addLine("a:1:1 [0] NCCL INFO Channel 01/0 : 1[1] -> 2[0] [send] via NET/IB/0");
  }
  auto f = builder.finish();
  CHECK(f.edgeLines == 20000);
  CHECK(f.edges.size() == 2);
  CHECK(f.gdrdma == false);  // NET edges, none with GDRDMA
  auto j = toJson(f);
  CHECK(j["transports"] == nlohmann::json({"NET/IB", "P2P"}));
  CHECK(j["matrix"]["ranks"] == nlohmann::json({0, 1, 2}));
  CHECK(j["matrix"]["cells"][0][1] == "P2P");
  CHECK(j["matrix"]["cells"][1][2] == "NET/IB");
  CHECK(j["matrix"]["cells"][2][0].is_null());
  for (const char* key :
       {"nccl_version", "cuda_version", "hosts", "nranks", "network", "transports", "gdrdma", "edge_lines",
        "env_overrides", "init_complete_lines", "coll_ops", "has_warn", "failure_kinds"})
    CHECK(j.contains(key));
}

TEST_CASE("files are read whole: lines across mapping windows, no final newline, special files", "[profiler][parser]") {
  namespace fs = std::filesystem;
  const auto path = fs::temp_directory_path() / ("ddprof-big-" + std::to_string(::getpid()) + ".log");
  const int lines = 260000;  // ~37 MB: the 16 MiB windows cut lines
  {
    std::ofstream out(path);
    for (int i = 0; i < lines; ++i)
      out << "node-" << (i % 3) << ":1:1 [0] NCCL INFO AllReduce: opCount " << std::hex << i << std::dec
          << " sendbuff 0x1 recvbuff 0x2 count 1024 datatype 7 op 0 root 0 comm 0x5 [nranks=4] stream 0x9"
          << (i + 1 < lines ? "\n" : "");
  }
  REQUIRE(fs::file_size(path) > (32u << 20));
  auto f = readNcclLogs({path.string()});
  CHECK(f.linesRead == static_cast<uint64_t>(lines));
  CHECK(f.linesRecognised == static_cast<uint64_t>(lines));
  CHECK(f.collOps.at("AllReduce") == static_cast<uint64_t>(lines));
  CHECK(f.hosts == std::set<std::string>{"node-0", "node-1", "node-2"});
  CHECK(f.linesDamaged == 0);
  fs::remove(path);
  // /proc files report size 0 and are read, not mapped.
  auto proc = readNcclLogs({"/proc/self/status"});
  CHECK(proc.linesRead > 5);
  CHECK(proc.linesRecognised == 0);
}

TEST_CASE("facts with bytes that are not UTF-8 still become JSON (found by fuzz_nccl_log)", "[profiler][nccl]") {
  NcclFactsBuilder builder;
  builder.addLine("h\xff\xfe:1570:1570 [0] NCCL INFO Channel 35/64 :    0");
  builder.addLine("h\xff\xfe:1570:1570 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to e\xc3");
  const auto text = ddp::jsonText(toJson(builder.finish()));
  CHECK_THAT(text, Catch::Contains("h\xef\xbf\xbd"));  // U+FFFD in place of the bad bytes
  CHECK(nlohmann::json::parse(text).is_object());
}

TEST_CASE("the forward reading of the standard prefix agrees with the general one on every real line",
          "[profiler][parser]") {
  // A leading blank keeps a line off the forward path (its host must start the line) without
  // changing what the general reading finds, so the two readings of each line are compared.
  namespace fs = std::filesystem;
  size_t standard = 0, lines = 0;
  for (const char* dir : {"nccl-logs", "gpu-h200"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(DDP_TEST_DATA_DIR) / dir)) {
      if (entry.path().extension() != ".log") continue;
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) {
        ++lines;
        const auto forward = parseNcclLine(line);
        const std::string blank = " " + line;  // the views of the parse point into it
        const auto general = parseNcclLine(blank);
        INFO(entry.path().filename().string() << ": " << line);
        REQUIRE(forward.has_value() == general.has_value());
        if (!forward) continue;
        standard += !line.empty() && line[0] != ' ' && forward->hasPrefix && forward->file.empty();
        CHECK(forward->hasPrefix == general->hasPrefix);
        CHECK(forward->host == general->host);
        CHECK(forward->pid == general->pid);
        CHECK(forward->tid == general->tid);
        CHECK(forward->dev == general->dev);
        CHECK(forward->level == general->level);
        CHECK(forward->file == general->file);
        CHECK(forward->fileLine == general->fileLine);
        CHECK(forward->message == general->message);
        CHECK(forward->damaged == general->damaged);
      }
    }
  }
  CHECK(lines > 1000);
  CHECK(standard > lines / 4);  // the forward path was taken on a good share of them
}
