// The readable summary of `ddprof nccl` (renderers only format).
#include "ddp/profiler/nccl/facts.hpp"

#include <fmt/format.h>

namespace ddp::profiler {
namespace {

std::string_view meaning(FailureKind kind) {
  switch (kind) {
    case FailureKind::kConnectionRefused:
      return "a peer was not listening: it crashed or had not started, or a firewall rejects the port";
    case FailureKind::kConnectionTimeout:
      return "packets to a peer got no answer: wrong interface (set NCCL_SOCKET_IFNAME), firewall or routing";
    case FailureKind::kSocketAbort:
      return "a peer closed its connection: usually another rank died first; look for its error";
    case FailureKind::kIbCompletionError:
      return "an RDMA operation failed on the NIC: link flap, wrong GID index (NCCL_IB_GID_INDEX) or MTU, or a dead "
             "peer";
    case FailureKind::kUnhandledSystemError:
      return "a system call or library call failed (sockets, shared memory, /dev/shm size, ulimit -l)";
    case FailureKind::kUnhandledCudaError:
      return "a CUDA call failed: driver/runtime mismatch, out of memory or a faulted kernel";
    case FailureKind::kTimeout:
      return "a collective or connection did not finish in time: a hung or dead rank, or ranks calling different "
             "collectives";
    case FailureKind::kNoIbDevice:
      return "no InfiniBand/RoCE/eRDMA device usable: between hosts NCCL falls back to TCP sockets";
    case FailureKind::kDuplicateGpu:
      return "two ranks of one communicator on the same GPU: one rank per GPU, each on its own device "
             "(CUDA_VISIBLE_DEVICES or cudaSetDevice(LOCAL_RANK))";
    case FailureKind::kRemoteError:
      return "a peer's process exited or the network to it failed: find the rank that died first, its own error";
    case FailureKind::kCollNetFailed:
      return "CollNet (SHARP in-network reduction) could not be set up: NCCL goes on point-to-point; check the "
             "switches' SHARP support, the sharp plugin and its aggregation manager";
  }
  return "";
}

template <typename Set>
std::string joined(const Set& items, std::string_view none = "-") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + std::string(item);
  return out.empty() ? std::string(none) : out;
}

}  // namespace

std::string renderNcclSummary(const NcclFacts& f) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) { out += fmt::format("{:<14}{}\n", label, value); };
  line("NCCL",
       f.ncclVersion ? *f.ncclVersion + (f.cudaVersion ? " (CUDA " + *f.cudaVersion + ")" : "") : "not printed");
  if (f.cudaDriverVersion) line("CUDA driver", std::to_string(*f.cudaDriverVersion));
  line("ranks",
       f.nranks ? std::to_string(*f.nranks) + (f.nnodes ? fmt::format(" on {} nodes", *f.nnodes) : "") : "not printed");
  line("hosts", fmt::format("{} ({})", f.hosts.size(), joined(f.hosts)));
  line("network", f.network.value_or("not printed"));
  if (!f.ibDevices.empty()) line("IB devices", joined(f.ibDevices));
  if (!f.socketInterfaces.empty()) line("socket ifs", joined(f.socketInterfaces));
  line("transports", joined(transportNames(f), "none seen (no channel/ring lines)"));
  line("GPUDirect", !f.gdrdma ? "not said" : *f.gdrdma ? "GDRDMA on NET edges" : "off (NET edges without GDRDMA)");
  if (!f.envOverrides.empty()) {
    std::vector<std::string> env;
    for (const auto& [k, v] : f.envOverrides) env.push_back(k + "=" + v);
    line("environment", joined(env));
  }
  if (!f.collOps.empty()) {
    std::vector<std::string> ops;
    for (const auto& [op, n] : f.collOps) ops.push_back(fmt::format("{} {}", op, n));
    line("collectives", joined(ops));
  }
  line("init", fmt::format("{} Init COMPLETE line(s)", f.initCompleteLines));

  // The rank x rank transport matrix, for jobs small enough to print.
  std::set<int> ranks;
  std::map<std::pair<int, int>, std::string> cells;
  for (const auto& [key, e] : f.edges) {
    ranks.insert(e.from);
    ranks.insert(e.to);
    auto& cell = cells[{e.from, e.to}];
    cell += (cell.empty() ? "" : "+") + transportName(e.transport, e.via);
  }
  if (!ranks.empty() && ranks.size() <= 16) {
    out += "\ntransport matrix (row: from rank, column: to rank)\n";
    size_t width = 4;
    for (const auto& [k, c] : cells) width = std::max(width, c.size() + 1);
    out += fmt::format("{:>6}", "");
    for (int to : ranks) out += fmt::format("{:>{}}", to, width);
    out += "\n";
    for (int from : ranks) {
      out += fmt::format("{:>6}", from);
      for (int to : ranks) {
        auto it = cells.find({from, to});
        out += fmt::format("{:>{}}", it == cells.end() ? "." : it->second, width);
      }
      out += "\n";
    }
  } else if (!ranks.empty()) {
    out += fmt::format("\n{} rank pairs with edges (matrix in --json)\n", cells.size());
  }

  if (f.hasWarn() || !f.failureKinds.empty()) {
    out += fmt::format("\nerrors: {} WARN line(s)\n", f.warnLines);
    for (const auto& w : f.warnings) {
      out += fmt::format("  {}:{} [{}] {}{}\n", w.host, w.pid, w.dev,
                         w.file.empty() ? "" : fmt::format("{}:{} ", w.file, w.line), w.message);
    }
    if (f.warningsDropped) out += fmt::format("  ... and {} more\n", f.warningsDropped);
    for (auto kind : f.failureKinds) out += fmt::format("  {}: {}\n", failureKindName(kind), meaning(kind));
  }
  out += fmt::format("\nlines: {} read, {} recognised{}\n", f.linesRead, f.linesRecognised,
                     f.linesDamaged ? fmt::format(", {} interleaved", f.linesDamaged) : "");
  return out;
}

}  // namespace ddp::profiler
