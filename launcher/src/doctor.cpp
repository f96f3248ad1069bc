#include "ddp/launcher/doctor.hpp"

#include "ddp/common/environment.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/json_text.hpp"
#include "ddp/common/net.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/profiler/nccl/line.hpp"
#include "ddp/profiler/projection/instances.hpp"
#include "probe.hpp"
#include "procfs.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strings.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <sstream>

namespace ddp::launcher {
namespace {

namespace fs = std::filesystem;

std::string firstLine(const std::string& text, const std::string& containing = "") {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && (containing.empty() || line.find(containing) != std::string::npos)) return line;
  return "";
}

// ddpbench beside ddprun (installed), in the build tree, or on PATH.
std::optional<std::string> findDdpbench(const Environment& environment) {
  const fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  for (const auto& candidate : {self / "ddpbench", self.parent_path() / "comm" / "ddpbench"}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  try {
    return resolveExecutable("ddpbench", environment);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

std::vector<Check> gpuChecks(int& gpuCount) {
  std::vector<Check> out;
  auto gpus = probe::gpus();
  gpuCount = gpus ? static_cast<int>(gpus->gpus.size()) : 0;
  if (gpus && gpuCount > 0) {
    std::string list;
    for (const auto& g : gpus->gpus) list += (list.empty() ? "" : "; ") + g;
    out.push_back({"GPUs and driver", CheckStatus::kPass,
                   fmt::format("{} GPU(s), driver {} ({}): {}", gpuCount, gpus->driver, gpus->source, list), ""});
  } else {
    out.push_back(
        {"GPUs and driver", CheckStatus::kWarn,
         "no NVIDIA GPU or driver on this machine (no NVML, no nvidia-smi): the nccl backend cannot run here; "
         "training on the CPU with the gloo and mpi backends works",
         "on a GPU instance, install the NVIDIA driver: nvidia-smi must list the GPUs"});
  }
  auto cuda = probe::cuda();
  if (!cuda) {
    out.push_back({"CUDA runtime", CheckStatus::kInfo, "libcudart not found: only CPU backends",
                   gpuCount ? "install the CUDA runtime matching the driver" : ""});
  } else if (cuda->devices > 0) {
    bool newer = cuda->runtime && cuda->driver && std::stod(*cuda->runtime) > std::stod(*cuda->driver) + 1e-9;
    out.push_back({"CUDA runtime vs driver", newer ? CheckStatus::kFail : CheckStatus::kPass,
                   fmt::format("runtime {}, driver supports {}; {} device(s) usable", cuda->runtime.value_or("?"),
                               cuda->driver.value_or("?"), cuda->devices),
                   newer ? "update the NVIDIA driver, or use a build for the driver's CUDA version" : ""});
  } else {
    out.push_back(
        {"CUDA runtime vs driver", gpuCount ? CheckStatus::kFail : CheckStatus::kWarn,
         fmt::format("runtime {}, no usable device: {}", cuda->runtime.value_or("?"),
                     cuda->error.empty() ? "cudaGetDeviceCount is 0" : cuda->error),
         gpuCount ? "the driver is older than the runtime or not loaded: update it (nvidia-smi shows its CUDA version)"
                  : "expected without a GPU"});
  }
  return out;
}

std::vector<Check> softwareChecks(const Environment& environment, int gpuCount, std::string& mpirun) {
  std::vector<Check> out;
  if (auto nccl = probe::ncclVersion()) {
    int major = 0, minor = 0;
    std::sscanf(nccl->c_str(), "%d.%d", &major, &minor);
    bool old = major == 2 && minor < 19;
    out.push_back({"NCCL", old ? CheckStatus::kWarn : CheckStatus::kPass,
                   "NCCL " + *nccl + (old ? ": older than 2.19, which eRDMA needs" : ""),
                   old ? "use NCCL >= 2.19 on ERI/eRDMA instances" : ""});
  } else {
    out.push_back({"NCCL", gpuCount ? CheckStatus::kFail : CheckStatus::kInfo, "libnccl.so.2 not found",
                   gpuCount ? "install NCCL (libnccl2) for multi-GPU training" : ""});
  }
  if (auto torch = probe::libtorch()) {
    bool cpuOnlyOnGpus = gpuCount > 0 && !torch->cuda;
    out.push_back(
        {"LibTorch", cpuOnlyOnGpus ? CheckStatus::kWarn : CheckStatus::kPass,
         fmt::format("LibTorch {} ({}) in {}", torch->version, torch->cuda ? "with CUDA" : "CPU only", torch->dir),
         cpuOnlyOnGpus ? "this LibTorch has no CUDA: use a CUDA build to train on the GPUs" : ""});
  } else {
    out.push_back({"LibTorch", CheckStatus::kWarn,
                   "TorchConfig.cmake not found: train and the gloo backend need LibTorch",
                   "apt-get install libtorch-dev (CPU) or unpack a CUDA LibTorch and set Torch_DIR"});
  }
  try {
    mpirun = resolveExecutable("mpirun", environment);
    auto version = probe::openMpiVersion(mpirun);
    out.push_back(
        {"Open MPI", version ? CheckStatus::kPass : CheckStatus::kWarn,
         version ? fmt::format("Open MPI {} ({})", *version, mpirun) : fmt::format("{} is not Open MPI's", mpirun),
         version ? "" : "ddprun starts ranks with Open MPI's mpirun: apt-get install openmpi-bin"});
  } catch (const ConfigError&) {
    out.push_back(
        {"Open MPI", CheckStatus::kFail, "mpirun not found on PATH", "apt-get install openmpi-bin libopenmpi-dev"});
  }
  return out;
}

// The RDMA devices under sys/class/infiniband, in the directory's order.
std::vector<std::string> rdmaDevices(const fs::path& sys) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sys / "class/infiniband", ec))
    out.push_back(e.path().filename().string());
  return out;
}

std::vector<Check> systemChecks() {
  std::vector<Check> out;
  std::string ifs;
  for (const auto& i : net::listInterfaces())
    if (!i.loopback) ifs += (ifs.empty() ? "" : ", ") + i.name + " " + i.address;
  out.push_back(
      {"network interfaces", ifs.empty() ? CheckStatus::kWarn : CheckStatus::kPass,
       ifs.empty() ? "only loopback: one host only" : ifs,
       ifs.empty()
           ? "multi-host jobs need an interface the hosts share (NCCL_SOCKET_IFNAME / DDP_GLOO_IFNAME choose it)"
           : ""});

  std::string rdma;
  bool erdma = false;
  for (const auto& name : rdmaDevices("/sys")) {
    erdma = erdma || profiler::isErdmaDevice(name);
    rdma += (rdma.empty() ? "" : ", ") + name;
  }
  if (rdma.empty())
    out.push_back({"RDMA devices", CheckStatus::kInfo,
                   "no InfiniBand / RoCE / eRDMA device (/sys/class/infiniband): NCCL uses TCP sockets between hosts",
                   "for multi-node training choose an instance with ERI/eRDMA or InfiniBand and install rdma-core; "
                   "one-host jobs are not affected"});
  else
    out.push_back({"RDMA devices", CheckStatus::kPass, rdma + (erdma ? " (eRDMA: NCCL >= 2.19)" : ""), ""});

  struct statvfs shm {};
  if (::statvfs("/dev/shm", &shm) != 0) {
    out.push_back(
        {"/dev/shm", CheckStatus::kFail, "no /dev/shm", "mount a tmpfs on /dev/shm (docker: --shm-size=16g)"});
  } else {
    const double gib = static_cast<double>(shm.f_blocks) * shm.f_frsize / (1ull << 30);
    out.push_back(
        {"/dev/shm", gib < 1 ? CheckStatus::kWarn : CheckStatus::kPass, fmt::format("{:.1f} GiB", gib),
         gib < 1 ? "NCCL's SHM transport and data loaders need more: docker --shm-size=16g (or --ipc=host)" : ""});
  }
  struct rlimit lim {};
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  const bool unlimited = lim.rlim_cur == RLIM_INFINITY;
  out.push_back(
      {"ulimit -l", unlimited ? CheckStatus::kPass : CheckStatus::kWarn,
       unlimited ? "unlimited" : fmt::format("{} KiB of locked memory", lim.rlim_cur / 1024),
       unlimited ? "" : "RDMA (InfiniBand, eRDMA) registers memory: ulimit -l unlimited (docker --ulimit memlock=-1)"});
  return out;
}

std::vector<Check> allreduceChecks(const Environment& environment, const std::string& mpirun, int gpuCount) {
  std::vector<Check> out;
  if (mpirun.empty()) return out;
  auto bench = findDdpbench(environment);
  if (!bench) {
    out.push_back(
        {"allreduce", CheckStatus::kWarn, "ddpbench not found beside ddprun or on PATH: no test allreduce", ""});
    return out;
  }
  auto list = runCapture({*bench, "--list-backends"}, 30);
  std::map<std::string, std::string> rootEnv;
  if (::geteuid() == 0)
    rootEnv = {{std::string(env::kOmpiAllowRoot), "1"}, {std::string(env::kOmpiAllowRootConfirm), "1"}};
  std::istringstream names(list.output);
  for (std::string backend; std::getline(names, backend);) {
    if (backend.empty()) continue;
    const std::string name = "allreduce " + backend + ", 2 ranks";
    if (backend == "nccl" && gpuCount < 2) {
      out.push_back({name, CheckStatus::kInfo,
                     gpuCount ? "needs 2 GPUs (NCCL refuses two ranks on one GPU)" : "skipped: no GPU", ""});
      continue;
    }
    auto c = runCapture({mpirun,      "-np",  "2",         "--oversubscribe",
                         "--bind-to", "none", *bench,      "--backend",
                         backend,     "--op", "allreduce", "-b",
                         "1K",        "-e",   "1K",        "-n",
                         "2",         "-w",   "1",         "-c",
                         "1"},
                        60, rootEnv);
    const bool ok =
        !c.timedOut && !c.status.failed() && c.output.find("Out of bounds values : 0 OK") != std::string::npos;
    std::string why = c.timedOut ? "timed out after 60 s" : firstLine(c.output, "ddpbench:");
    if (why.empty()) why = firstLine(c.output);
    out.push_back(
        {name, ok ? CheckStatus::kPass : CheckStatus::kFail, ok ? "1 KiB allreduce correct on both ranks" : why,
         ok ? "" : fmt::format("run it by hand: mpirun -np 2 {} --backend {} -b 1K -e 1K -c 1", *bench, backend)});
  }
  return out;
}

}  // namespace

std::string_view checkStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kInfo:
      return "info";
  }
  return "?";
}

std::string renderChecks(const std::vector<Check>& checks) {
  std::string out;
  for (const auto& c : checks) {
    out += fmt::format("{:<5} {:<26} {}\n", checkStatusName(c.status), c.name, c.detail);
    if (!c.fix.empty()) out += fmt::format("{:<33}fix: {}\n", "", c.fix);
  }
  return out;
}

nlohmann::json checksJson(const std::vector<Check>& checks) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : checks)
    j.push_back({{"name", c.name}, {"status", checkStatusName(c.status)}, {"detail", c.detail}, {"fix", c.fix}});
  return j;
}

Check instanceCheck(const profiler::Instance& expected, int gpuCount) {
  const auto gpus = expected.gpus();
  const bool mismatch = gpus && *gpus != gpuCount;
  return {"instance type", mismatch ? CheckStatus::kWarn : CheckStatus::kInfo,
          describe(expected) + (gpus ? fmt::format("; this machine has {} GPU(s)", gpuCount) : ""),
          mismatch
              ? fmt::format("{} should have {} {} GPU(s): check the instance type, or the driver if GPUs are missing",
                            expected.name, *gpus, expected.family.gpu.empty() ? "" : expected.family.gpu)
              : ""};
}

namespace {

// A one-line sysfs file's value, "" when it cannot be read.
std::string readLine(const fs::path& path) {
  const std::string text = procfs::readSmallFile(path.string()).value_or("");
  return text.substr(0, text.find('\n'));
}

// The interfaces NCCL_SOCKET_IFNAME selects: a comma list of prefixes, "=" for exact names, "^" to
// exclude (NCCL's rule); the names of those under class/net that match.
std::vector<std::string> selectedInterfaces(const fs::path& net, const std::string& spec) {
  std::string list = spec;
  const bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list.erase(0, 1);
  const bool exact = !list.empty() && list[0] == '=';
  if (exact) list.erase(0, 1);
  std::vector<std::string> prefixes;
  std::istringstream items(list);
  for (std::string item; std::getline(items, item, ',');)
    if (!item.empty()) prefixes.push_back(item);
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(net, ec)) {
    const auto name = e.path().filename().string();
    if (name == "lo") continue;
    bool match = false;
    for (const auto& p : prefixes) match = match || (exact ? name == p : name.rfind(p, 0) == 0);
    if (match != exclude) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<Check> erdmaChecks(const std::string& sys, const Environment& environment) {
  std::vector<std::string> devices;
  for (auto& name : rdmaDevices(sys))
    if (profiler::isErdmaDevice(name)) devices.push_back(std::move(name));
  if (devices.empty()) return {};
  std::sort(devices.begin(), devices.end());
  std::string names;
  for (const auto& d : devices) names += (names.empty() ? "" : ", ") + d;
  const auto var = [&](const char* name) { return environment.get(name).value_or(""); };
  std::vector<Check> out;
  // NCCL drives eRDMA as IB verbs: nothing may turn the IB transport off or steer it elsewhere.
  const std::string hca = var("NCCL_IB_HCA"), disable = var("NCCL_IB_DISABLE"), net = var("NCCL_NET");
  const std::string pai = "NCCL_IB_HCA=erdma NCCL_SOCKET_IFNAME=eth0 NCCL_IB_GID_INDEX=1 NCCL_NET_PLUGIN=none";
  // NCCL_IB_HCA lists the devices to use, or with a leading ^ those to leave out (NCCL's rule).
  const bool hcaExcludes = !hca.empty() && hca[0] == '^';
  const bool hcaLeavesOut = !hca.empty() && (hca.find("erdma") == std::string::npos) != hcaExcludes;
  if (disable == "1" || (!net.empty() && strcasecmp(net.c_str(), "IB") != 0))
    out.push_back({"eRDMA: NCCL transport", CheckStatus::kWarn,
                   fmt::format("{} present, but {}: NCCL uses TCP sockets between hosts", names,
                               disable == "1" ? "NCCL_IB_DISABLE=1" : "NCCL_NET=" + net),
                   fmt::format("unset {} and set {} (Alibaba PAI's settings)",
                               disable == "1" ? "NCCL_IB_DISABLE" : "NCCL_NET", pai)});
  else if (hcaLeavesOut)
    out.push_back({"eRDMA: NCCL transport", CheckStatus::kWarn,
                   fmt::format("{} present, but NCCL_IB_HCA={} leaves them out", names, hca),
                   "NCCL_IB_HCA=erdma (or the devices by name: " + names + ")"});
  else
    out.push_back({"eRDMA: NCCL transport", hca.empty() ? CheckStatus::kInfo : CheckStatus::kPass,
                   fmt::format("{}; NCCL_IB_HCA={}", names, hca.empty() ? "unset (NCCL takes every IB device)" : hca),
                   hca.empty() ? fmt::format("Alibaba PAI sets {}; NCCL >= 2.19", pai) : ""});
  // The interface for NCCL's bootstrap and sockets, and its MTU.
  const fs::path netDir = fs::path(sys) / "class/net";
  const std::string ifname = var("NCCL_SOCKET_IFNAME");
  const auto selected = selectedInterfaces(netDir, ifname.empty() ? "eth" : ifname);
  if (selected.empty()) {
    out.push_back({"eRDMA: NCCL_SOCKET_IFNAME", CheckStatus::kWarn,
                   ifname.empty() ? "unset, and no eth* interface" : fmt::format("{} selects no interface", ifname),
                   "NCCL_SOCKET_IFNAME=<the instance's primary interface, eth0 on Alibaba Cloud images>"});
    return out;
  }
  if (ifname.empty())
    out.push_back({"eRDMA: NCCL_SOCKET_IFNAME", CheckStatus::kInfo, "unset: NCCL picks an interface itself",
                   "NCCL_SOCKET_IFNAME=" + selected.front() + " (Alibaba PAI sets eth0)"});
  for (const auto& i : selected) {
    const std::string mtu = readLine(netDir / i / "mtu");
    const bool ok = mtu == "8500" || mtu == "1400";
    out.push_back({"eRDMA: MTU " + i, ok ? CheckStatus::kPass : CheckStatus::kWarn,
                   fmt::format("{} (NCCL's LL128 protocol needs 8500 with jumbo frames, 1400 without)",
                               mtu.empty() ? "unknown" : mtu),
                   ok ? ""
                      : fmt::format("Alibaba warns that another MTU corrupts data with LL128: ip link set {} mtu 8500 "
                                    "(jumbo frames on) or 1400, or NCCL_PROTO=^LL128",
                                    i)});
  }
  return out;
}

int runDoctor(const DoctorOptions& options, std::ostream& out) {
  std::optional<profiler::Instance> expected;
  if (!options.instance.empty()) expected = profiler::decodeInstance(options.instance);
  const auto environment = Environment::fromProcess();
  int gpuCount = 0;
  std::string mpirun;
  std::vector<Check> checks = gpuChecks(gpuCount);
  if (expected) checks.push_back(instanceCheck(*expected, gpuCount));
  for (auto& c : softwareChecks(environment, gpuCount, mpirun)) checks.push_back(std::move(c));
  for (auto& c : systemChecks()) checks.push_back(std::move(c));
  for (auto& c : erdmaChecks("/sys", environment)) checks.push_back(std::move(c));
  if (options.allreduce)
    for (auto& c : allreduceChecks(environment, mpirun, gpuCount)) checks.push_back(std::move(c));
  const bool failed =
      std::any_of(checks.begin(), checks.end(), [](const Check& c) { return c.status == CheckStatus::kFail; });
  if (options.json) {
    out << jsonText(checksJson(checks), 2) << "\n";
  } else {
    out << renderChecks(checks);
    out << (gpuCount ? fmt::format("\n{} GPU(s): multi-GPU training with the nccl backend.\n", gpuCount)
                     : "\nNo GPU: ddprun, train, ddpbench and ddprof work here on the CPU (gloo and mpi backends); "
                       "the nccl backend needs a GPU machine.\n");
  }
  return failed ? 1 : 0;
}

}  // namespace ddp::launcher
