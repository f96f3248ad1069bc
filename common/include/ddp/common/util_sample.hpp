#pragma once
// One utilisation sample of a profiled run (docs/launcher.md, "Utilisation"): a line of
// util/rank-NNNNN.jsonl (RunLayout::utilisation), appended by ddprun's worker every interval,
// read by the profiler.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

struct UtilSample {
  int rank = 0;
  int64_t tUnixUs = 0;
  double cpuPct = 0;            // CPU use of the rank's process group; 100 = one core
  double rssMib = 0;            // its resident memory
  int processes = 0;            // processes in the group
  std::optional<unsigned> gpu;  // the NVML index of the rank's GPU, where NVML answered
  std::optional<double> gpuUtilPct, gpuMemUtilPct, gpuMemUsedMib;
};

// One line of JSON (no newline).
std::string formatUtilSample(const UtilSample& sample);
// ConfigError naming the field for a line that is not a sample.
UtilSample parseUtilSample(std::string_view line);

}  // namespace ddp
