#pragma once
// One line of NCCL_DEBUG output, parsed (docs/nccl-parser.md). Pure functions over
// std::string_view: "not my line" is std::nullopt, never an error. Views point into the line.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::profiler {

enum class Level { kInfo, kWarn, kTrace };

// "host:pid:tid [dev] [file:line [(func)] ]NCCL LEVEL message", found anywhere in a physical
// line; legacy lines (NCCL <= 2.2) have no "NCCL" tag. When two lines were interleaved onto one
// physical line, the last complete one is taken and `damaged` is set.
struct NcclLine {
  bool hasPrefix = false;
  std::string_view host;  // may be empty (seen in real logs)
  int64_t pid = -1, tid = -1;
  int dev = -1;
  Level level = Level::kInfo;
  std::string_view file;  // WARN source location, e.g. "misc/socket.cc"
  int fileLine = -1;
  std::string_view message;
  bool damaged = false;
};

std::optional<NcclLine> parseNcclLine(std::string_view line);

// parseNcclLine over the lines of a log in order. A run of lines from one thread shares its
// standard prefix ("host:pid:tid [dev] NCCL LEVEL "): the reader keeps the last one, and a line
// that starts with it is read as parseNcclLine reads it, without reading the prefix again.
class NcclLineReader {
 public:
  std::optional<NcclLine> parse(std::string_view line);

 private:
  std::string prefix_;  // the last standard prefix, with the blank after the level
  NcclLine fields_;     // what it held (host: the first hostLength_ bytes of prefix_)
  size_t hostLength_ = 0;
};

// "NCCL version 2.27.6+cuda12.9", bare or as a message.
struct VersionInfo {
  std::string_view nccl;  // "2.27.6"
  std::string_view cuda;  // "12.9"; empty when the suffix is not a version
};
std::optional<VersionInfo> parseVersion(std::string_view text);

enum class TransportClass { kP2P, kShm, kNetIb, kNetSocket, kNetOther, kNvls, kCollNet };
// P2P, SHM, NET/IB, NET/Socket, NET/<plugin>, NVLS, COLLNET
std::string_view transportClassName(TransportClass c);
// Whether an RDMA device is Alibaba Cloud's eRDMA: its name, "erdma_0" in sysfs, "erdma_0:1/RoCE" in
// NCCL's NET/IB line, is all that tells it from Mellanox RoCE (both are Ethernet link layers).
inline bool isErdmaDevice(std::string_view device) { return device.substr(0, 5) == "erdma"; }

// The network a "NET/<name>/..." edge names ("AWS Libfabric" of "NET/AWS Libfabric/1(2)/GDRDMA").
std::string_view netName(std::string_view via);
// An edge's transport as it prints itself: a network plugin by its own name ("NET/AWS Libfabric"
// from "via NET/AWS Libfabric/1(2)/GDRDMA/Shared"), every other class by its class name.
std::string transportName(TransportClass c, std::string_view via);

// A connection between two ranks: every edge form of NCCL 2.4 -> 2.28
// ("Ring 00 : 26[2] -> 24[0] via P2P/IPC", "Channel 01/0 : 13[92000] -> 4[89000] [send] via
// NET/IB/0(5)/GDRDMA", "Channel 07 : 2[6] -> 3[7] via SHM/direct/direct", ...).
struct Edge {
  int channel = -1;
  int from = -1, to = -1;
  std::string_view via;  // the transport text after "via"
  TransportClass transport = TransportClass::kP2P;
  int direction = 0;  // +1 send, -1 receive, 0 not said
  int netDevice = -1;
  int proxyRank = -1;  // PXN relay rank
  bool gdr = false;
};
std::optional<Edge> parseEdge(std::string_view message);

// "NCCL_IB_DISABLE set by environment to 1."
struct EnvOverride {
  std::string_view name, value;
};
std::optional<EnvOverride> parseEnvOverride(std::string_view message);

// Per-collective COLL lines: "AllReduce: opCount 1f sendbuff ... count 1024 datatype 7 op 0
// root 0 comm 0x... [nranks=8] stream 0x...".
struct CollRecord {
  std::string_view op;
  uint64_t opCount = 0;
  uint64_t count = 0;
  int datatype = -1, redop = -1, root = -1, nranks = -1;
};
std::optional<CollRecord> parseColl(std::string_view text);
// Only the op name and [nranks=N] of a COLL line (what the facts need), read from both ends
// without walking the middle.
std::optional<CollRecord> parseCollSummary(std::string_view text);
// The same, for a message whose ':' of ": opCount " is known to be at `colon` (nullopt when it is
// not that ':').
std::optional<CollRecord> collSummaryAt(std::string_view text, size_t colon);

// Failure kinds of docs/nccl-parser.md, recognised in WARN and INFO messages.
enum class FailureKind {
  kConnectionRefused,
  kConnectionTimeout,
  kSocketAbort,
  kIbCompletionError,
  kUnhandledSystemError,
  kUnhandledCudaError,
  kTimeout,
  kNoIbDevice,
  kDuplicateGpu,
  kRemoteError,
  kCollNetFailed
};
std::string_view failureKindName(FailureKind kind);
std::optional<FailureKind> classifyFailure(std::string_view message);
// A line of PyTorch's ProcessGroupNCCL between NCCL's own (no NCCL prefix): its watchdog's
// timeout ("Watchdog caught collective operation timeout"), a DistBackendError's ncclRemoteError.
std::optional<FailureKind> classifyTorchNcclLine(std::string_view line);

// The number in "key N" (first occurrence, whole word) or nullopt.
std::optional<int64_t> numberAfter(std::string_view text, std::string_view key);

}  // namespace ddp::profiler
