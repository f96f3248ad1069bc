#pragma once
// The facts of one or more NCCL_DEBUG logs (the `ddprof nccl --json` contract of DESIGN.md,
// docs/nccl-parser.md), built by streaming lines through NcclFactsBuilder: one pass, memory
// bounded by the job's size (hosts, ranks, edges), never by the log's.

#include "ddp/profiler/nccl/line.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace ddp::profiler {

struct EdgeSummary {
  int from = -1, to = -1;
  TransportClass transport = TransportClass::kP2P;
  std::string via;  // the first transport text seen for this pair and class
  int lines = 0;    // edge lines (channels x directions) seen
  bool gdr = false;
  int proxyRank = -1;
};

struct NcclWarning {
  std::string host;
  int64_t pid = -1;
  int dev = -1;
  std::string file;  // empty when the line has no source location
  int line = -1;
  std::string message;
  std::optional<FailureKind> kind;
};

struct InitTiming {
  int rank = -1, nranks = -1;
  double totalSeconds = 0;
};

struct NcclFacts {
  std::optional<std::string> ncclVersion, cudaVersion;
  std::optional<int64_t> cudaDriverVersion;
  std::set<std::string> hosts;
  std::optional<int> nranks, nnodes;
  std::optional<std::string> network;  // see docs/nccl-parser.md for the fallbacks
  std::set<std::string> ibDevices;     // "mlx5_0:1/IB", "erdma_0:1/RoCE"
  std::set<std::string> socketInterfaces;
  std::set<TransportClass> transports;
  std::set<std::string> netPlugins;  // network plugins as the edges name them: "AWS Libfabric"
  std::optional<bool> gdrdma;
  uint64_t edgeLines = 0, initCompleteLines = 0, warnLines = 0;
  uint64_t linesRead = 0, linesRecognised = 0, linesDamaged = 0;
  std::map<std::string, std::string> envOverrides;
  std::map<std::string, uint64_t, std::less<>> collOps;
  std::set<FailureKind> failureKinds;
  std::map<std::tuple<int, int, int>, EdgeSummary> edges;  // (from, to, class)
  std::vector<NcclWarning> warnings;                       // the first kMaxWarnings
  uint64_t warningsDropped = 0;
  std::vector<InitTiming> initTimings;      // the first kMaxInitTimings
  std::map<int64_t, uint64_t> returnCodes;  // "file:line -> N" trails
  std::map<int, std::string> rankHosts;     // from lines that name a rank

  static constexpr size_t kMaxWarnings = 200;
  static constexpr size_t kMaxInitTimings = 4096;
  bool hasWarn() const { return warnLines > 0; }
};

// The transports seen, sorted, a network plugin by its own name ("NET/AWS Libfabric").
std::vector<std::string> transportNames(const NcclFacts& facts);

// Edge summaries while a log is read, keyed on (from, to, transport class): open addressing over
// integer keys, so an edge line costs a hash and a compare instead of a tree walk.
class EdgeTable {
 public:
  EdgeSummary& at(int from, int to, TransportClass transport);
  const std::vector<EdgeSummary>& all() const { return edges_; }
  // Adds the edges a later stretch of the log gave, as if its lines had followed this one's.
  void merge(const EdgeTable& later);

 private:
  struct Slot {
    int from = 0, to = 0, transport = 0;
    uint32_t index = 0;  // into edges_, plus one; 0: empty
  };
  std::vector<Slot> slots_;
  std::vector<EdgeSummary> edges_;
};

class NcclFactsBuilder {
 public:
  // One physical line, without its newline.
  void addLine(std::string_view line);
  // Takes in the builder of the lines that follow this one's (a later stretch of the same log,
  // or the next file): the facts come out as if one builder had read all the lines in order.
  void merge(const NcclFactsBuilder& later);
  // The facts so far, with the network fallbacks and gdrdma resolved.
  NcclFacts finish() const;

 private:
  void addMessage(const NcclLine& line);
  bool addHotLine(std::string_view message);  // an edge or a COLL record: most of a long log
  void addWarning(const NcclLine& line, std::optional<FailureKind> failure);
  bool addSetting(std::string_view message);            // an env override, the version, a return code
  void addInitFacts(const NcclLine& line);              // ranks, nodes, init timings, Init COMPLETE
  void addNetwork(std::string_view message);            // the network and devices NCCL uses
  void addEdgelessTransport(std::string_view message);  // NVLS and CollNet, which print no edges
  void addEdge(const Edge& edge);
  void see(TransportClass t) { transports_ |= 1u << static_cast<unsigned>(t); }
  void addColl(const CollRecord& coll);
  NcclLineReader reader_;
  std::string lastHost_;
  NcclFacts facts_;  // all but edges and transports, which finish() fills from these two:
  EdgeTable edges_;
  unsigned transports_ = 0;         // bit (1 << TransportClass)
  std::optional<bool> netIbUsing_;  // the last "NET/IB : Using" line: for the data, or only sideband
  bool netSocketUsing_ = false, internalSocket_ = false;
  bool ringGdrOn_ = false, ringGdrOff_ = false;
};

// Streams files through builders, in order; throws ConfigError naming a file that cannot be read.
// A large regular file is cut at line boundaries into one stretch per thread, each read by a
// builder of its own and merged in file order (the same facts as one builder reading it all).
// threads 0: one stretch per CPU in the process's affinity, at most 8 and at most one per 8 MiB
// of the file; otherwise exactly that many stretches per regular file, however small (tests).
NcclFacts readNcclLogs(const std::vector<std::string>& paths, unsigned threads = 0);

// The DESIGN.md object, plus edges, the rank x rank transport matrix, warnings, line counts.
nlohmann::json toJson(const NcclFacts& facts);
// A readable summary: version, ranks, hosts, network and devices, transport matrix, GDR,
// errors with what they usually mean.
std::string renderNcclSummary(const NcclFacts& facts);

}  // namespace ddp::profiler
