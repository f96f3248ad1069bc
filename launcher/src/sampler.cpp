#include "sampler.hpp"

#include "ddp/comm/error.hpp"
#include "ddp/comm/json_text.hpp"
#include "ddp/comm/timings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace ddp::launcher {

GroupUsage groupUsage(int pgid) {
  GroupUsage usage;
  DIR* proc = ::opendir("/proc");
  if (!proc) return usage;
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(fmt::format("/proc/{}/stat", e->d_name));
    std::string line;
    if (!std::getline(in, line)) continue;
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    // cutime cstime priority nice threads itrealvalue starttime vsize rss; comm may hold spaces.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0, pgrp = 0, rss = 0;
    unsigned long long utime = 0, stime = 0, skip = 0;
    long long cutime = 0, cstime = 0;
    if (std::sscanf(line.c_str() + close + 1,
                    " %c %ld %ld %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d %*d %*d %llu %*u %ld", &state,
                    &ppid, &pgrp, &utime, &stime, &cutime, &cstime, &skip, &rss) != 9)
      continue;
    if (pgrp != pgid) continue;
    usage.ticks += utime + stime + static_cast<unsigned long long>(std::max(0LL, cutime + cstime));
    usage.rssPages += static_cast<unsigned long long>(std::max(0L, rss));
    ++usage.processes;
  }
  ::closedir(proc);
  return usage;
}

UtilSampler::UtilSampler(const std::string& path, int rank, std::optional<unsigned> gpu, std::chrono::milliseconds interval)
    : rank_(rank), gpuIndex_(gpu), interval_(interval) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw ConfigError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  if (gpu) {
    gpu_ = std::make_unique<probe::GpuSampler>(*gpu);
    if (!gpu_->available()) gpu_.reset();
  }
}

UtilSampler::~UtilSampler() {
  if (file_) std::fclose(file_);
}

void UtilSampler::poll(int pgid) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + interval_;
  const auto usage = groupUsage(pgid);
  if (usage.processes == 0) return;
  if (!primed_) {  // the first reading only sets the baseline
    primed_ = true;
    lastTicks_ = usage.ticks;
    last_ = now;
    return;
  }
  static const double ticksPerSecond = static_cast<double>(::sysconf(_SC_CLK_TCK));
  static const double pageMiB = static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 20);
  const double seconds = std::chrono::duration<double>(now - last_).count();
  const double cpu = seconds > 0 ? 100.0 * static_cast<double>(usage.ticks - std::min(usage.ticks, lastTicks_)) /
                                       ticksPerSecond / seconds
                                 : 0;
  lastTicks_ = usage.ticks;
  last_ = now;
  nlohmann::json line = {{"rank", rank_},
                         {"t_unix_us", comm::unixMicros()},
                         {"cpu_pct", std::round(cpu * 10) / 10},
                         {"rss_mib", std::round(static_cast<double>(usage.rssPages) * pageMiB * 10) / 10},
                         {"processes", usage.processes}};
  if (gpu_) {
    if (auto s = gpu_->sample()) {
      line["gpu"] = *gpuIndex_;
      line["gpu_util_pct"] = s->gpuUtilPct;
      line["gpu_mem_util_pct"] = s->memUtilPct;
      line["gpu_mem_used_mib"] = s->memUsedMiB;
    }
  }
  const auto text = jsonText(line) + "\n";
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace ddp::launcher
