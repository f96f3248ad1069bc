// A log read in stretches, by builders merged in order or by readNcclLogs' threads, gives the
// facts of one builder reading every line in order: on the real fixtures at every line
// boundary, and on a log written to cross every merge rule (later values win, counts add, the
// capped lists keep their first entries).
#include "ddp/common/json_text.hpp"
#include "ddp/profiler/nccl/facts.hpp"

#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace ddp::profiler;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> linesOf(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string factsText(NcclFactsBuilder& builder) { return ddp::jsonText(toJson(builder.finish())); }

// The facts of lines [cuts[k], cuts[k+1]) read by builder k, merged in order.
std::string mergedText(const std::vector<std::string>& lines, const std::vector<size_t>& cuts) {
  NcclFactsBuilder first;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    NcclFactsBuilder part;
    for (size_t i = cuts[k]; i < cuts[k + 1]; ++i) part.addLine(lines[i]);
    if (k == 0)
      first = std::move(part);
    else
      first.merge(part);
  }
  return factsText(first);
}

std::string wholeText(const std::vector<std::string>& lines) {
  NcclFactsBuilder builder;
  for (const auto& line : lines) builder.addLine(line);
  return factsText(builder);
}

// Every merge rule crossed: settings that change, the same edges and ranks in every part,
// more warnings and init timings than the facts keep.
std::vector<std::string> mixedLog() {
  std::vector<std::string> lines;
  for (int part = 0; part < 3; ++part) {
    const std::string prefix = "host-" + std::to_string(part) + ":10" + std::to_string(part) + ":7 [0] NCCL ";
    lines.push_back(prefix + "INFO NCCL version 2." + std::to_string(18 + part) + ".3+cuda12." + std::to_string(part));
    lines.push_back(prefix + "INFO cudaDriverVersion 1200" + std::to_string(part));
    lines.push_back(prefix + "INFO NCCL_IB_HCA set by environment to mlx5_" + std::to_string(part));
    lines.push_back(prefix + (part == 1 ? "INFO NET/IB : Using [0]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>"
                                        : "INFO NET/IB : Using [0]mlx5_0:1/RoCE for sideband"));
    if (part == 2) lines.push_back(prefix + "INFO NET/Socket : Using [0]eth0:10.0.0.2<0>");
    lines.push_back(prefix + "INFO Using network " + (part == 0 ? "Socket" : "IB"));
    lines.push_back(prefix + "INFO comm 0x1 rank 3 nRanks " + std::to_string(4 + part) + " nNodes " +
                    std::to_string(part + 1) + " localRanks 1 localRank 0 MNNVL 0");
    lines.push_back(prefix + "INFO Connected all rings, use ring PXN 0 GDR " + std::to_string(part % 2));
    for (int i = 0; i < 150; ++i) {
      lines.push_back(prefix + "INFO Channel 0" + std::to_string(i % 4) + "/0 : 0[0] -> 1[1] [send] via NET/IB/0" +
                      (part == 2 ? "/GDRDMA" : "") + (i % 3 == 0 ? "(2)" : ""));
      lines.push_back(prefix + "INFO AllReduce: opCount " + std::to_string(i) +
                      " sendbuff 0x1 recvbuff 0x2 count 64 datatype 7 op 0 root 0 comm 0x1 [nranks=4] stream 0x0");
      lines.push_back(prefix + "WARN socketProgress: Connection reset by peer " + std::to_string(i));
      lines.push_back(prefix + "INFO Init timings - ncclCommInitRank: rank " + std::to_string(i) + " nranks 4 total " +
                      std::to_string(part) + ".5");
      lines.push_back(prefix + "INFO misc/socket.cc:56" + std::to_string(part) + " -> " + std::to_string(2 + i % 2));
    }
    lines.push_back(prefix + "INFO ncclCommInitRank comm 0x1 rank 3 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE");
  }
  return lines;
}

}  // namespace

TEST_CASE("two builders merged at any line give the facts of one reading every line", "[profiler][parser]") {
  size_t files = 0;
  for (const char* dir : {"nccl-logs", "gpu-h200"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(DDP_TEST_DATA_DIR) / dir)) {
      if (entry.path().extension() != ".log") continue;
      ++files;
      const auto lines = linesOf(entry.path());
      const std::string whole = wholeText(lines);
      const size_t step = std::max<size_t>(1, lines.size() / 300);
      for (size_t cut = 0; cut <= lines.size(); cut += step) {
        INFO(entry.path().filename() << " cut before line " << cut);
        REQUIRE(mergedText(lines, {0, cut, lines.size()}) == whole);
      }
    }
  }
  CHECK(files >= 16);
}

TEST_CASE("every merge rule: later settings win, counts add, capped lists keep their first entries",
          "[profiler][parser]") {
  const auto lines = mixedLog();
  const std::string whole = wholeText(lines);
  NcclFactsBuilder builder;
  for (const auto& line : lines) builder.addLine(line);
  const auto f = builder.finish();
  REQUIRE(f.warnings.size() == NcclFacts::kMaxWarnings);
  REQUIRE(f.warningsDropped == 450 - NcclFacts::kMaxWarnings);
  CHECK(f.ncclVersion == "2.20.3");
  CHECK(f.network == "IB");
  CHECK(f.nranks == 6);
  CHECK(f.rankHosts.at(3) == "host-2");
  for (size_t a = 0; a <= lines.size(); a += 37)
    for (size_t b = a; b <= lines.size(); b += 53) {
      INFO("cuts " << a << ", " << b);
      REQUIRE(mergedText(lines, {0, a, b, lines.size()}) == whole);
    }
}

TEST_CASE("readNcclLogs gives the same facts with any number of threads", "[profiler][parser]") {
  const auto dir = fs::temp_directory_path() / ("ddprof-threads-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> paths, all;
  for (const auto& entry : fs::directory_iterator(fs::path(DDP_TEST_DATA_DIR) / "nccl-logs"))
    if (entry.path().extension() == ".log") paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  {
    const auto mixed = mixedLog();
    std::ofstream out(dir / "mixed.log");
    for (size_t i = 0; i < mixed.size(); ++i) out << mixed[i] << (i + 1 < mixed.size() ? "\n" : "");
  }
  paths.push_back((dir / "mixed.log").string());
  for (const auto& path : paths)
    for (auto& line : linesOf(path)) all.push_back(std::move(line));
  const std::string whole = wholeText(all);
  for (unsigned threads : {1u, 2u, 3u, 7u, 64u}) {
    INFO(threads << " threads");
    CHECK(ddp::jsonText(toJson(readNcclLogs(paths, threads))) == whole);
  }
  CHECK(ddp::jsonText(toJson(readNcclLogs(paths))) == whole);
  fs::remove_all(dir);
}
