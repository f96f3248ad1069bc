// Rules on what the NCCL logs say: errors, the transport between hosts and within a host, GDR,
// init time.
#include "ddp/common/run_layout.hpp"
#include "ddp/profiler/projection/instances.hpp"
#include "diagnosis/rules.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::profiler::rules {
namespace {

constexpr double kInitSlowSeconds = 10;  // NCCL init: init_slow

std::string ncclCommand(const RunData& run) { return "ddprof nccl " + RunLayout(run.dir).ncclDir() + "/*.log"; }

// Why the run's hosts have eRDMA, if anything says so: NCCL saw erdma_* devices, NCCL_IB_HCA
// names them, or the run's instance type (ddprun --instance) is of an eRDMA family. "" if nothing.
std::string erdmaEvidence(const RunData& run) {
  const auto& n = *run.nccl;
  for (const auto& d : n.ibDevices)
    if (isErdmaDevice(d)) return fmt::format("NCCL found {}", d);
  if (const auto hca = n.envOverrides.find("NCCL_IB_HCA");
      hca != n.envOverrides.end() && hca->second.find("erdma") != std::string::npos)
    return "NCCL_IB_HCA=" + hca->second;
  const auto instance = recordedInstance(run.instance);
  return instance && instance->family.erdma.value_or(false) ? fmt::format("{} has eRDMA (ERI)", instance->name) : "";
}

}  // namespace

void ncclErrors(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl) return;
  const auto& n = *run.nccl;
  if (n.failureKinds.empty() && !n.hasWarn()) return;
  if (n.failureKinds == std::set<FailureKind>{FailureKind::kNoIbDevice} && !n.hasWarn()) return;  // socket_fallback's
  std::string kinds;
  for (auto k : n.failureKinds) kinds += (kinds.empty() ? "" : ", ") + std::string(failureKindName(k));
  add(out, FindingKind::kNcclError, Severity::kCritical, {},
      n.warnLines == 0 ? fmt::format("PyTorch's ProcessGroupNCCL among the NCCL lines: {}", kinds)
                       : fmt::format("{} NCCL WARN line(s){}{}", n.warnLines, kinds.empty() ? "" : " (" + kinds + ")",
                                     n.warnings.empty() ? "" : fmt::format("; first: {}", n.warnings.front().message)),
      "see `ddprof nccl` for what each failure usually means; a connection error right after one rank died is "
      "collateral",
      Confidence::kHigh, ncclCommand(run));
}

void socketFallback(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl) return;
  const auto& n = *run.nccl;
  const bool multiNode = n.hosts.size() > 1 || n.nnodes.value_or(1) > 1;
  if (n.network != "Socket" || (!multiNode && n.ibDevices.empty())) return;
  const std::string erdma = erdmaEvidence(run);
  // On eRDMA the fallback is silent: the fix is NCCL's IB transport on the erdma devices, as
  // Alibaba's PAI configures it (docs/diagnosis.md, "eRDMA").
  const std::string fix =
      erdma.empty()
          ? "use RDMA between hosts: an instance with ERI/eRDMA or InfiniBand, the RDMA drivers (libibverbs, "
            "rdma-core) in the image, and NCCL_IB_HCA naming the devices (erdma_0 / mlx5_0); NCCL >= 2.19 for eRDMA"
          : "NCCL can use the hosts' eRDMA through its IB transport: NCCL >= 2.19 with rdma-core's erdma provider in "
            "the image, NCCL_IB_HCA=erdma, NCCL_SOCKET_IFNAME=eth0, NCCL_IB_GID_INDEX=1, NCCL_NET_PLUGIN=none, and "
            "no NCCL_IB_DISABLE=1 or NCCL_NET=Socket (Alibaba PAI's settings); in a container, an unlimited "
            "memlock (ibv_create_qp fails with -12 at 64 KiB)";
  add(out, FindingKind::kSocketFallback, Severity::kWarning, {},
      fmt::format("NCCL uses TCP sockets (network Socket{}){}{}",
                  multiNode ? fmt::format(", {} hosts", n.hosts.size()) : "",
                  n.failureKinds.count(FailureKind::kNoIbDevice) ? "; NET/IB : No device found" : "",
                  erdma.empty() ? "" : fmt::format(", though the hosts have eRDMA ({})", erdma)),
      fix, Confidence::kHigh,
      erdma.empty() ? "ibv_devices on each host, and grep 'Using network' in the NCCL logs"
                    : "ibv_devinfo -d erdma_0 on each host; /sys/class/infiniband/erdma_0/ports/1/hw_counters/"
                      "hw_tx_bytes_cnt should grow during a step; grep 'NET/IB' in the NCCL logs");
}

void p2pDisabled(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl) return;
  const auto& n = *run.nccl;
  const auto disable = n.envOverrides.find("NCCL_P2P_DISABLE");
  const auto level = n.envOverrides.find("NCCL_P2P_LEVEL");
  const bool disabled = disable != n.envOverrides.end() && disable->second == "1";
  const bool leveled = level != n.envOverrides.end();
  const bool shmEdges = n.transports.count(TransportClass::kShm) > 0;
  if (!disabled && !leveled && !shmEdges) return;
  add(out, FindingKind::kP2pDisabled, Severity::kWarning, {},
      fmt::format("GPUs on one host talk through host memory{}{}", shmEdges ? " (SHM edges)" : "",
                  disable != n.envOverrides.end() ? " with NCCL_P2P_DISABLE=" + disable->second
                  : leveled                       ? " with NCCL_P2P_LEVEL=" + level->second
                                                  : ""),
      "unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL; for communication-heavy jobs choose an NVLink instance (gn7, gn7e)",
      disabled || leveled ? Confidence::kHigh : Confidence::kMedium, "nvidia-smi topo -m (the GPUs' links)");
}

void noGdr(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl || run.nccl->gdrdma != false) return;
  add(out, FindingKind::kNoGdr, Severity::kInfo, {}, "network edges without GPUDirect RDMA (no /GDRDMA on NET edges)",
      "load nvidia-peermem (GPUDirect RDMA) and set NCCL_NET_GDR_LEVEL (e.g. SYS on eRDMA instances, where GDR is "
      "off by default)",
      Confidence::kMedium, "lsmod | grep nvidia_peermem");
}

void initSlow(const RunData& run, const TimingAnalysis&, Findings& out) {
  if (!run.nccl) return;
  double slowest = 0;
  for (const auto& timing : run.nccl->initTimings) slowest = std::max(slowest, timing.totalSeconds);
  if (slowest <= kInitSlowSeconds) return;
  add(out, FindingKind::kInitSlow, Severity::kWarning, {},
      fmt::format("NCCL communicator init took up to {:.1f} s", slowest),
      "check bootstrap networking (NCCL_SOCKET_IFNAME), DNS, and that every rank starts at the same time",
      Confidence::kHigh, "grep 'Init timings' in the NCCL logs");
}

}  // namespace ddp::profiler::rules
