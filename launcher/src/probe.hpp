#pragma once
// What is installed on this host, found without linking it: versions for run.json and the
// checks of `ddprun doctor`. Each probe is quick and never throws; nullopt means "not found".

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher::probe {

// "4.1.4" from `mpirun --version`.
std::optional<std::string> openMpiVersion(const std::string& mpirun);
// "2.28.9" from ncclGetVersion in libnccl.so.2 (dlopen): the loader's search, then these paths.
std::optional<std::string> ncclVersion();
const std::vector<std::string>& ncclFallbacks();
// The CUDA runtime's and the driver's versions ("13.0") through libcudart (dlopen), and
// cudaGetDeviceCount's answer (an error text when it fails).
struct CudaInfo {
  std::optional<std::string> runtime, driver;
  int devices = 0;
  std::string error;  // why no device is usable, from the runtime
};
std::optional<CudaInfo> cuda();
// NVML (libnvidia-ml.so.1): the driver version and one line per GPU ("0: NVIDIA H200, 143771 MiB").
struct GpuInfo {
  std::string driver;
  std::vector<std::string> gpus;
  std::string source;  // "NVML" or "nvidia-smi"
};
std::optional<GpuInfo> gpus();
// One GPU's utilisation through NVML, loaded at run time: none where there is no driver.
struct GpuSample {
  unsigned gpuUtilPct = 0, memUtilPct = 0;  // NVML's "GPU-Util" (a kernel was running) and memory-controller busy
  unsigned long long memUsedMiB = 0;
  std::optional<double> smClockMhz, smClockMaxMhz, powerW;
  std::vector<std::string> throttleReasons;  // the active clock limits, by name (gpu_idle left out)
};
// The names of the limits set in an NVML throttle-reason mask: sw_power_cap, hw_slowdown,
// sw_thermal, hw_thermal, hw_power_brake, applications_clocks, sync_boost, display_clocks.
std::vector<std::string> throttleReasonNames(unsigned long long mask);

// One GPU's sample, read through NVML; an empty reader where NVML or the device is not there.
using GpuReader = std::function<std::optional<GpuSample>()>;
// NVML (dlopen of libnvidia-ml.so.1) for NVML's device index `device`, loaded while the reader lives.
GpuReader openGpu(unsigned device);

// LibTorch: its version (TorchConfigVersion.cmake) and whether libtorch_cuda is beside it.
struct TorchInfo {
  std::string version, dir;
  bool cuda = false;
};
std::optional<TorchInfo> libtorch();
// Where libtorch() looks for TorchConfigVersion.cmake: $Torch_DIR, then the usual prefixes.
std::vector<std::string> libtorchConfigDirs();

}  // namespace ddp::launcher::probe
