#include "probe.hpp"

#include "ddp/launcher/process.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

namespace ddp::launcher::probe {
namespace {

// Lazily bound: of libraries as big as libnccl (200 MB) only the few functions called are resolved,
// which takes a third less time than binding every symbol at load (RTLD_NOW).
void* openFirst(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (void* h = ::dlopen(name, RTLD_LAZY | RTLD_LOCAL)) return h;
  return nullptr;
}

template <typename F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(::dlsym(handle, name));
}

std::string cudaVersionText(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

}  // namespace

std::optional<std::string> openMpiVersion(const std::string& mpirun) {
  try {
    auto c = runCapture({mpirun, "--version"}, 10);
    std::smatch m;
    if (std::regex_search(c.output, m, std::regex(R"(Open MPI\)? ([0-9][0-9.a-z]*))"))) return m[1].str();
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

const std::vector<std::string>& ncclFallbacks() {
  static const std::vector<std::string> paths = {"/usr/local/cuda/lib64/libnccl.so.2",
                                                 "/usr/local/cuda/lib/libnccl.so.2"};
  return paths;
}

std::optional<std::string> ncclVersion() {
  void* h = openFirst({"libnccl.so.2", ncclFallbacks()[0].c_str(), ncclFallbacks()[1].c_str()});
  if (!h) return std::nullopt;
  std::optional<std::string> out;
  if (auto get = symbol<int (*)(int*)>(h, "ncclGetVersion")) {
    int code = 0;
    if (get(&code) == 0 && code > 0)
      out = code >= 10000 ? fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
                          : fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
  }
  ::dlclose(h);
  return out;
}

std::optional<CudaInfo> cuda() {
  void* h = openFirst({"libcudart.so.13", "libcudart.so.12", "libcudart.so", "/usr/local/cuda/lib64/libcudart.so"});
  if (!h) return std::nullopt;
  CudaInfo info;
  auto runtime = symbol<int (*)(int*)>(h, "cudaRuntimeGetVersion");
  auto driver = symbol<int (*)(int*)>(h, "cudaDriverGetVersion");
  auto count = symbol<int (*)(int*)>(h, "cudaGetDeviceCount");
  auto errorString = symbol<const char* (*)(int)>(h, "cudaGetErrorString");
  int v = 0;
  if (runtime && runtime(&v) == 0 && v > 0) info.runtime = cudaVersionText(v);
  v = 0;
  if (driver && driver(&v) == 0 && v > 0) info.driver = cudaVersionText(v);
  if (count) {
    int rc = count(&info.devices);
    if (rc != 0) {
      info.devices = 0;
      info.error = fmt::format("{} (CUDA error {})", errorString ? errorString(rc) : "cudaGetDeviceCount failed", rc);
    }
  }
  // The runtime stays loaded: unloading it after a failed driver probe is not always safe.
  return info;
}

namespace {

class GpuSampler {
 public:
  explicit GpuSampler(unsigned device);  // NVML's device index
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;
  bool available() const { return device_ != nullptr; }
  std::optional<GpuSample> sample() const;

 private:
  void* device_ = nullptr;
  int (*shutdown_)() = nullptr;
  int (*utilisation_)(void*, unsigned*) = nullptr;         // nvmlDeviceGetUtilizationRates (2 unsigned)
  int (*memory_)(void*, unsigned long long*) = nullptr;    // nvmlDeviceGetMemoryInfo (total, free, used)
  int (*clock_)(void*, int, unsigned*) = nullptr;          // nvmlDeviceGetClockInfo (MHz)
  int (*maxClock_)(void*, int, unsigned*) = nullptr;       // nvmlDeviceGetMaxClockInfo (MHz)
  int (*power_)(void*, unsigned*) = nullptr;               // nvmlDeviceGetPowerUsage (mW)
  int (*throttle_)(void*, unsigned long long*) = nullptr;  // nvmlDeviceGetCurrentClocksThrottleReasons
};

GpuSampler::GpuSampler(unsigned device) {
  void* h = openFirst({"libnvidia-ml.so.1"});
  if (!h) return;
  auto init = symbol<int (*)()>(h, "nvmlInit_v2");
  auto handle = symbol<int (*)(unsigned, void**)>(h, "nvmlDeviceGetHandleByIndex_v2");
  shutdown_ = symbol<int (*)()>(h, "nvmlShutdown");
  utilisation_ = symbol<int (*)(void*, unsigned*)>(h, "nvmlDeviceGetUtilizationRates");
  memory_ = symbol<int (*)(void*, unsigned long long*)>(h, "nvmlDeviceGetMemoryInfo");
  clock_ = symbol<int (*)(void*, int, unsigned*)>(h, "nvmlDeviceGetClockInfo");
  maxClock_ = symbol<int (*)(void*, int, unsigned*)>(h, "nvmlDeviceGetMaxClockInfo");
  power_ = symbol<int (*)(void*, unsigned*)>(h, "nvmlDeviceGetPowerUsage");
  throttle_ = symbol<int (*)(void*, unsigned long long*)>(h, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!init || !handle || !utilisation_ || init() != 0) return;
  if (handle(device, &device_) != 0) device_ = nullptr;
}

GpuSampler::~GpuSampler() {
  if (device_ && shutdown_) shutdown_();
}

std::optional<GpuSample> GpuSampler::sample() const {
  if (!device_) return std::nullopt;
  unsigned rates[2] = {};
  if (utilisation_(device_, rates) != 0) return std::nullopt;
  GpuSample s;
  s.gpuUtilPct = rates[0];
  s.memUtilPct = rates[1];
  unsigned long long memory[3] = {};
  if (memory_ && memory_(device_, memory) == 0) s.memUsedMiB = memory[2] >> 20;
  constexpr int kClockSm = 1;  // NVML_CLOCK_SM
  unsigned value = 0;
  if (clock_ && clock_(device_, kClockSm, &value) == 0) s.smClockMhz = value;
  if (maxClock_ && maxClock_(device_, kClockSm, &value) == 0) s.smClockMaxMhz = value;
  if (power_ && power_(device_, &value) == 0) s.powerW = value / 1000.0;
  unsigned long long reasons = 0;
  if (throttle_ && throttle_(device_, &reasons) == 0) s.throttleReasons = throttleReasonNames(reasons);
  return s;
}

}  // namespace

GpuReader openGpu(unsigned device) {
  auto sampler = std::make_shared<GpuSampler>(device);
  if (!sampler->available()) return {};
  return [sampler] { return sampler->sample(); };
}

std::vector<std::string> throttleReasonNames(unsigned long long mask) {
  // nvmlClocksThrottleReasons (nvml.h); GpuIdle (0x1) is not a limit on a working GPU.
  static const std::pair<unsigned long long, const char*> kReasons[] = {
      {0x2, "applications_clocks"}, {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"},     {0x10, "sync_boost"},
      {0x20, "sw_thermal"},         {0x40, "hw_thermal"},  {0x80, "hw_power_brake"}, {0x100, "display_clocks"}};
  std::vector<std::string> out;
  for (const auto& [bit, name] : kReasons)
    if (mask & bit) out.emplace_back(name);
  return out;
}

std::optional<GpuInfo> gpus() {
  if (void* h = openFirst({"libnvidia-ml.so.1"})) {
    using Device = void*;
    struct Memory {
      unsigned long long total, free, used;
    };
    auto init = symbol<int (*)()>(h, "nvmlInit_v2");
    auto shutdown = symbol<int (*)()>(h, "nvmlShutdown");
    auto driver = symbol<int (*)(char*, unsigned)>(h, "nvmlSystemGetDriverVersion");
    auto count = symbol<int (*)(unsigned*)>(h, "nvmlDeviceGetCount_v2");
    auto handle = symbol<int (*)(unsigned, Device*)>(h, "nvmlDeviceGetHandleByIndex_v2");
    auto name = symbol<int (*)(Device, char*, unsigned)>(h, "nvmlDeviceGetName");
    auto memory = symbol<int (*)(Device, Memory*)>(h, "nvmlDeviceGetMemoryInfo");
    if (init && init() == 0) {
      GpuInfo info;
      info.source = "NVML";
      char buf[96] = {};
      if (driver && driver(buf, sizeof buf) == 0) info.driver = buf;
      unsigned n = 0;
      if (count && count(&n) == 0)
        for (unsigned i = 0; i < n; ++i) {
          Device d = nullptr;
          char gpuName[96] = "?";
          Memory mem{};
          if (handle && handle(i, &d) == 0) {
            if (name) name(d, gpuName, sizeof gpuName);
            if (memory) memory(d, &mem);
          }
          info.gpus.push_back(fmt::format("{}: {}, {} MiB", i, gpuName, mem.total >> 20));
        }
      if (shutdown) shutdown();
      return info;
    }
  }
  try {
    auto c =
        runCapture({"nvidia-smi", "--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader"}, 15);
    if (!c.status.failed() && !c.timedOut) {
      GpuInfo info;
      info.source = "nvidia-smi";
      std::istringstream in(c.output);
      for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        auto last = line.rfind(", ");
        if (last != std::string::npos) {
          info.driver = line.substr(last + 2);
          line = line.substr(0, last);
        }
        info.gpus.push_back(line);
      }
      return info;
    }
  } catch (const std::exception&) {  // no nvidia-smi on PATH
  }
  return std::nullopt;
}

std::vector<std::string> libtorchConfigDirs() {
  std::vector<std::string> dirs;
  if (const char* hint = std::getenv("Torch_DIR")) dirs.emplace_back(hint);
  for (const char* d : {"/usr/lib/x86_64-linux-gnu/cmake/Torch", "/usr/lib/aarch64-linux-gnu/cmake/Torch",
                        "/usr/local/lib/cmake/Torch", "/usr/share/cmake/Torch", "/opt/libtorch/share/cmake/Torch"})
    dirs.emplace_back(d);
  return dirs;
}

std::optional<TorchInfo> libtorch() {
  namespace fs = std::filesystem;
  for (const fs::path dir : libtorchConfigDirs()) {
    std::ifstream in(dir / "TorchConfigVersion.cmake");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    if (!std::regex_search(text, m, std::regex(R"(set\(PACKAGE_VERSION "([^"]+)\"\))"))) continue;
    TorchInfo info{m[1].str(), dir.string(), false};
    // The libraries sit two or three levels above .../cmake/Torch.
    std::error_code ec;
    for (auto lib = dir.parent_path().parent_path(); !lib.empty() && lib != lib.root_path(); lib = lib.parent_path()) {
      for (const char* name : {"libtorch_cuda.so", "lib/libtorch_cuda.so"})
        info.cuda = info.cuda || fs::exists(lib / name, ec);
      if (fs::exists(lib / "libtorch_cpu.so", ec) || fs::exists(lib / "lib/libtorch_cpu.so", ec)) break;
    }
    return info;
  }
  return std::nullopt;
}

}  // namespace ddp::launcher::probe
