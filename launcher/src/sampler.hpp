#pragma once
// The utilisation samples of a profiled run (docs/launcher.md): every interval the worker
// appends one line to <run>/util/rank-NNNNN.jsonl with the CPU use and resident memory of its
// program's process group and, where NVML is present, its GPU's utilisation and memory.

#include "probe.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

namespace ddp::launcher {

// CPU ticks (user + system) and resident pages of every process in group pgid, from /proc.
struct GroupUsage {
  unsigned long long ticks = 0, rssPages = 0;
  int processes = 0;
};
GroupUsage groupUsage(int pgid);

class UtilSampler {
 public:
  // gpu: the NVML index of this rank's GPU, if it has one. Throws ConfigError when the file
  // cannot be created.
  UtilSampler(const std::string& path, int rank, std::optional<unsigned> gpu, std::chrono::milliseconds interval);
  ~UtilSampler();
  UtilSampler(const UtilSampler&) = delete;
  UtilSampler& operator=(const UtilSampler&) = delete;
  // Appends a sample when the interval has passed since the last one.
  void poll(int pgid);

 private:
  std::FILE* file_ = nullptr;
  int rank_;
  std::optional<unsigned> gpuIndex_;
  std::unique_ptr<probe::GpuSampler> gpu_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point next_{}, last_{};
  unsigned long long lastTicks_ = 0;
  bool primed_ = false;
};

}  // namespace ddp::launcher
